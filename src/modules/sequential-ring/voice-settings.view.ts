import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { FALLBACK_ACTIONS, type FallbackAction, type RingFallback, type RingTarget, type VoiceSettings } from './ring-plan.js';

/** A number's voice settings as stored and returned (defaults filled in): the schema of `voice`. */

@ApiSchema({ name: 'RingTarget' })
export class RingTargetView implements RingTarget {
  @ApiProperty({ example: '+15550002222' }) to!: string;
  @ApiProperty({ type: 'integer', minimum: 5, maximum: 120, example: 20, description: 'Seconds this target rings before the plan moves on' }) timeout_secs!: number;
}

@ApiSchema({ name: 'RingFallback' })
export class RingFallbackView implements RingFallback {
  @ApiProperty({ enum: FALLBACK_ACTIONS, example: 'voicemail' }) action!: FallbackAction;
  @ApiPropertyOptional({ example: '+15550009999', description: 'The last target dialed (forward)' }) to?: string;
}

@ApiSchema({ name: 'RingSettings' })
export class RingSettingsView {
  @ApiProperty({ type: [RingTargetView], minItems: 1, maxItems: 10 }) targets!: RingTargetView[];
  @ApiProperty({ type: RingFallbackView }) fallback!: RingFallbackView;
}

@ApiSchema({ name: 'VoiceSettings' })
export class VoiceSettingsView implements VoiceSettings {
  @ApiProperty({ type: RingSettingsView }) ring_plan!: RingSettingsView;
  @ApiProperty({ example: false, description: 'Answered calls are transcribed (call.transcribed)' }) transcribe!: boolean;
}
