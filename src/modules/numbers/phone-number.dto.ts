import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsNumber, IsObject, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { MAX_SEND_RATE, MIN_SEND_RATE } from './send-rates.js';
import { CARRIER_NAMES, type CarrierName } from '../../carriers/carrier-name.js';
import { VoiceSettingsDto } from '../sequential-ring/voice-settings.dto.js';
import { VoiceSettingsView } from '../sequential-ring/voice-settings.view.js';


export class MessagingSettingsDto {
  @ApiProperty({
    type: 'number',
    nullable: true,
    minimum: MIN_SEND_RATE,
    maximum: MAX_SEND_RATE,
    example: 10,
    description: "Message segments per second this number sends at most (the carrier's throughput for it), 0.01 to 1000 with at most 2 decimals (0.5: one segment every 2 s); null: the platform's default (see send_rate_source)",
  })
  @ValidateIf((_, v) => v !== null)
  @IsNumber({ allowNaN: false, allowInfinity: false, maxDecimalPlaces: 2 }, { message: 'send_rate_per_second must be a number (at most 2 decimals) or null' })
  @Min(MIN_SEND_RATE, { message: `send_rate_per_second must be at least ${MIN_SEND_RATE}` })
  @Max(MAX_SEND_RATE, { message: `send_rate_per_second must be at most ${MAX_SEND_RATE}` })
  send_rate_per_second!: number | null;
}

export class UpdatePhoneNumberDto {
  @ApiPropertyOptional({ type: MessagingSettingsDto, description: 'Sending pace' })
  @ValidateIf((_, v) => v !== undefined) @IsObject({ message: 'messaging must be an object' }) @ValidateNested() @Type(() => MessagingSettingsDto)
  messaging?: MessagingSettingsDto;


  @ApiPropertyOptional({ type: VoiceSettingsDto, nullable: true, description: 'Ring plan and transcription for calls to this number; null switches calls off' })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsObject({ message: 'voice must be an object or null' }) @ValidateNested() @Type(() => VoiceSettingsDto)
  voice?: VoiceSettingsDto | null;
}

export const NUMBER_STATUSES = ['ordering', 'active', 'releasing', 'released', 'failed'] as const;
export type NumberStatus = (typeof NUMBER_STATUSES)[number];

/** A number's sending pace, as the REST API shows it. */
@ApiSchema({ name: 'NumberMessagingSettings' })
export class NumberMessagingView {
  @ApiProperty({ type: 'number', example: 1, description: 'Message segments per second it sends at most, the rate its sends are paced by: its own rate, else the platform default' })
  send_rate_per_second!: number;
  @ApiProperty({ enum: ['number', 'default'], example: 'default', description: "number: set with PATCH; default: the platform's (the operator's MESSAGE_SEND_RATE_DEFAULT when set, else by carrier and type: long code or toll-free)" })
  send_rate_source!: 'number' | 'default';
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null, description: 'A carrier answered 429: no message from this number goes out before this time (its Retry-After)' })
  paused_until!: string | null;
}

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
  @ApiProperty({ type: () => NumberMessagingView }) messaging!: NumberMessagingView;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
}
