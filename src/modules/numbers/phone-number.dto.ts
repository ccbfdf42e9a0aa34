import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, ValidateIf, ValidateNested } from 'class-validator';
import { CARRIER_NAMES, type CarrierName } from '../../carriers/normalized-event.js';
import { VoiceSettingsDto } from '../sequential-ring/voice-settings.dto.js';
import { VoiceSettingsView } from '../sequential-ring/voice-settings.view.js';


export class UpdatePhoneNumberDto {
  @ApiPropertyOptional({ type: VoiceSettingsDto, nullable: true, description: 'Ring plan and transcription for calls to this number; null switches calls off' })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsObject({ message: 'voice must be an object or null' }) @ValidateNested() @Type(() => VoiceSettingsDto)
  voice?: VoiceSettingsDto | null;
}

export const NUMBER_STATUSES = ['ordering', 'active', 'releasing', 'released', 'failed'] as const;
export type NumberStatus = (typeof NUMBER_STATUSES)[number];

/** A number of the account, as the REST API shows it. */
@ApiSchema({ name: 'PhoneNumber' })
export class PhoneNumberView {
  @ApiProperty({ example: 'num_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['phone_number'] }) record_type!: 'phone_number';
  @ApiProperty({ example: '+15550001111' }) phone_number!: string;
  @ApiProperty({ enum: CARRIER_NAMES, example: 'telnyx' }) carrier!: CarrierName;
  @ApiProperty({
    enum: NUMBER_STATUSES,
    example: 'active',
    description: 'ordering: its order is at the carrier; active: yours, it routes; releasing: stopped routing, released at the carrier once no call is in progress; released; failed: its order failed',
  })
  status!: NumberStatus;
  @ApiProperty({ type: () => VoiceSettingsView, nullable: true, description: 'Voice settings (ring plan, transcription); null: calls to this number are not taken' })
  voice!: VoiceSettingsView | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
}
