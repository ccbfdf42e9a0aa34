import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsObject, IsOptional, Matches, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';
import { DEFAULT_TIMEOUT_SECS, FALLBACK_ACTIONS, type FallbackAction, type VoiceSettings } from './ring-plan.js';

export const MAX_TARGETS = 10;

export class RingTargetDto {
  @ApiProperty({ example: '+15550002222' })
  @Matches(E164_PATTERN, { message: `to ${E164_MESSAGE}` })
  to!: string;

  @ApiPropertyOptional({ minimum: 5, maximum: 120, default: DEFAULT_TIMEOUT_SECS, description: 'Seconds this target rings before the plan moves on' })
  @IsOptional() @IsInt({ message: 'timeout_secs must be a whole number of seconds' }) @Min(5, { message: 'timeout_secs must be at least 5' }) @Max(120, { message: 'timeout_secs must be at most 120' })
  timeout_secs?: number;
}

export class RingFallbackDto {
  @ApiProperty({ enum: FALLBACK_ACTIONS, default: 'hangup' })
  @IsIn(FALLBACK_ACTIONS, { message: `action must be one of: ${FALLBACK_ACTIONS.join(', ')}` })
  action!: FallbackAction;

  @ApiPropertyOptional({ example: '+15550009999', description: 'Required for forward: dialed as one last target' })
  @ValidateIf((o: RingFallbackDto) => o.action === 'forward' || o.to !== undefined)
  @Matches(E164_PATTERN, { message: `to ${E164_MESSAGE} (required when action is forward)` })
  to?: string;
}

export class RingPlanDto {
  @ApiProperty({ type: [RingTargetDto], minItems: 1, maxItems: MAX_TARGETS, description: 'Dialed one after another until one answers' })
  @IsArray({ message: 'targets must be an array' })
  @ArrayMinSize(1, { message: 'targets must hold at least 1 target' })
  @ArrayMaxSize(MAX_TARGETS, { message: `targets must hold at most ${MAX_TARGETS} targets` })
  @ValidateNested({ each: true }) @Type(() => RingTargetDto)
  targets!: RingTargetDto[];

  @ApiPropertyOptional({ type: RingFallbackDto, description: 'What happens when no target answers (default hangup)' })
  @IsOptional() @IsObject({ message: 'fallback must be an object' }) @ValidateNested() @Type(() => RingFallbackDto)
  fallback?: RingFallbackDto;
}

export class VoiceSettingsDto {
  @ApiProperty({ type: RingPlanDto })
  @IsObject({ message: 'ring_plan must be an object' }) @ValidateNested() @Type(() => RingPlanDto)
  ring_plan!: RingPlanDto;

  @ApiPropertyOptional({ default: false, description: 'Transcribe answered calls (call.transcribed)' })
  @IsOptional() @IsBoolean({ message: 'transcribe must be true or false' })
  transcribe?: boolean;
}

/** The settings as stored: defaults filled in. */
export function toVoiceSettings(dto: VoiceSettingsDto): VoiceSettings {
  const fallback = dto.ring_plan.fallback ?? { action: 'hangup' as const };
  return {
    ring_plan: {
      targets: dto.ring_plan.targets.map((t) => ({ to: t.to, timeout_secs: t.timeout_secs ?? DEFAULT_TIMEOUT_SECS })),
      fallback: { action: fallback.action, ...(fallback.to !== undefined && { to: fallback.to }) },
    },
    transcribe: dto.transcribe ?? false,
  };
}
