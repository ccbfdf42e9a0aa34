import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsOptional, IsString, Length, Matches } from 'class-validator';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';

export class SendMessageDto {
  @ApiProperty({ example: '+15550001111', pattern: E164_PATTERN.source, description: 'One of your phone numbers' })
  @Matches(E164_PATTERN, { message: `from ${E164_MESSAGE}` })
  from: string;

  @ApiProperty({ example: '+15550002222', pattern: E164_PATTERN.source })
  @Matches(E164_PATTERN, { message: `to ${E164_MESSAGE}` })
  to: string;

  @ApiProperty({ example: 'Your code is 1234', minLength: 1, maxLength: 1600 })
  @IsString()
  @Length(1, 1600, { message: 'text must be 1 to 1600 characters' })
  text: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-12-01T09:00:00Z', description: 'Future time (at most 30 days ahead) to send at' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'send_at must be an ISO 8601 date-time' })
  send_at?: string;
}
