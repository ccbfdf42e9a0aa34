import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsObject, Matches, ValidateIf, ValidateNested } from 'class-validator';
import type { CarrierName } from '../../carriers/normalized-event.js';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';
import { VoiceSettingsDto } from '../sequential-ring/voice-settings.dto.js';
import { VoiceSettingsView } from '../sequential-ring/voice-settings.view.js';

/** The carriers a number can be served by. */
const CARRIER_NAMES = ['telnyx', 'twilio'] as const satisfies readonly CarrierName[];

export class CreatePhoneNumberDto {
  @ApiProperty({ example: '+15550001111', pattern: E164_PATTERN.source, description: 'E.164' })
  @Matches(E164_PATTERN, { message: `phone_number ${E164_MESSAGE}` })
  phone_number: string;

  @ApiProperty({ enum: CARRIER_NAMES, example: 'telnyx', description: 'The carrier that serves the number' })
  @IsIn(CARRIER_NAMES)
  carrier: CarrierName;
}

export class UpdatePhoneNumberDto {
  @ApiPropertyOptional({ type: VoiceSettingsDto, nullable: true, description: 'Ring plan and transcription for calls to this number; null switches calls off' })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsObject({ message: 'voice must be an object or null' }) @ValidateNested() @Type(() => VoiceSettingsDto)
  voice?: VoiceSettingsDto | null;
}

/** A number of the account, as the REST API shows it. */
@ApiSchema({ name: 'PhoneNumber' })
export class PhoneNumberView {
  @ApiProperty({ example: 'num_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['phone_number'] }) record_type!: 'phone_number';
  @ApiProperty({ example: '+15550001111' }) phone_number!: string;
  @ApiProperty({ enum: CARRIER_NAMES, example: 'telnyx' }) carrier!: CarrierName;
  @ApiProperty({ type: () => VoiceSettingsView, nullable: true, description: 'Voice settings (ring plan, transcription); null: calls to this number are not taken' })
  voice!: VoiceSettingsView | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
}
