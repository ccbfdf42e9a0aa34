import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { CreatePhoneNumberDto, PhoneNumberView } from './phone-number.dto.js';
import { PhoneNumbers } from './phone-numbers.service.js';

@CustomerApi('Phone numbers')
@Controller('v2/phone_numbers')
export class PhoneNumbersController {
  constructor(private readonly numbers: PhoneNumbers) {}

  @Post()
  @ApiOperationDoc({
    summary: 'Register a phone number',
    description: 'One account per number: the first to register it owns it.',
    status: 201,
    body: CreatePhoneNumberDto,
    ok: DataOf(PhoneNumberView),
    errors: [[409, 'The number is registered already (code phone_number_taken)']],
  })
  async create(@AccountId() accountId: string, @Body() body: CreatePhoneNumberDto) {
    return { data: await this.numbers.claim(accountId, body.phone_number, body.carrier) };
  }

  @Get()
  @ApiOperationDoc({ summary: "List the account's phone numbers, newest first", ok: ListOf(PhoneNumberView), errors: [422] })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.numbers.list(accountId, page), page);
  }
}
