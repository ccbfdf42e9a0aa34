import { Body, Controller, Get, HttpCode, NotFoundException, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsObject, Matches, ValidateIf, ValidateNested } from 'class-validator';
import { toVoiceSettings, VoiceSettingsDto } from '../sequential-ring/voice-settings.dto.js';
import { AccountId, ApiKeyGuard } from '../accounts/api-key.guard.js';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import type { CarrierName } from '../../carriers/normalized-event.js';
import { PhoneNumbers } from './phone-numbers.service.js';

export class CreatePhoneNumberDto {
  @ApiProperty({ example: '+15550001111' })
  @Matches(E164_PATTERN, { message: `phone_number ${E164_MESSAGE}` })
  phone_number: string;

  @ApiProperty({ enum: ['telnyx', 'twilio'], example: 'telnyx' })
  @IsIn(['telnyx', 'twilio'])
  carrier: CarrierName;
}

export class UpdatePhoneNumberDto {
  @ApiPropertyOptional({ type: VoiceSettingsDto, nullable: true, description: 'Ring plan and transcription for calls to this number; null switches calls off' })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsObject({ message: 'voice must be an object or null' }) @ValidateNested() @Type(() => VoiceSettingsDto)
  voice?: VoiceSettingsDto | null;
}

function numberNotFound(): NotFoundException {
  return new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no phone number with this id' });
}

@ApiTags('Phone numbers')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('v2/phone_numbers')
export class PhoneNumbersController {
  constructor(private readonly numbers: PhoneNumbers) {}

  @Post()
  @HttpCode(201)
  async create(@AccountId() accountId: string, @Body() body: CreatePhoneNumberDto) {
    return { data: await this.numbers.claim(accountId, body.phone_number, body.carrier) };
  }

  @Get(':id')
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    const number = await this.numbers.get(accountId, id);
    if (!number) throw numberNotFound();
    return { data: number };
  }

  /** Voice settings: `{"voice": {...}}` sets them, `{"voice": null}` switches calls off, `{}` changes nothing. */
  @Patch(':id')
  async update(@AccountId() accountId: string, @Param('id') id: string, @Body() body: UpdatePhoneNumberDto) {
    const number =
      body.voice === undefined ? await this.numbers.get(accountId, id) : await this.numbers.setVoice(accountId, id, body.voice === null ? null : toVoiceSettings(body.voice));
    if (!number) throw numberNotFound();
    return { data: number };
  }

  @Get()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.numbers.list(accountId, page), page);
  }
}
