import { Body, Controller, Get, HttpCode, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsIn, Matches } from 'class-validator';
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

  @Get()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.numbers.list(accountId, page), page);
  }
}
