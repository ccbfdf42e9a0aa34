import { Body, Controller, Get, NotFoundException, Param, Patch, Post, Query } from '@nestjs/common';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { toVoiceSettings } from '../sequential-ring/voice-settings.dto.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { CreatePhoneNumberDto, PhoneNumberView, UpdatePhoneNumberDto } from './phone-number.dto.js';
import { PhoneNumbers } from './phone-numbers.service.js';

function numberNotFound(): NotFoundException {
  return new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no phone number with this id' });
}

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

  @Get(':id')
  @ApiOperationDoc({ summary: 'Get a phone number with its voice settings', ok: DataOf(PhoneNumberView), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    const number = await this.numbers.get(accountId, id);
    if (!number) throw numberNotFound();
    return { data: number };
  }

  /** Voice settings: `{"voice": {...}}` sets them, `{"voice": null}` switches calls off, `{}` changes nothing. */
  @Patch(':id')
  @ApiOperationDoc({
    summary: "Set a number's voice settings",
    description: '`{"voice": {...}}` sets the ring plan and transcription, `{"voice": null}` switches calls off, `{}` changes nothing.',
    body: UpdatePhoneNumberDto,
    ok: DataOf(PhoneNumberView),
    errors: [404, [422, 'Validation failed: 1 to 10 E.164 targets, timeout_secs 5 to 120, a known fallback (forward with its to); each errors[] entry names the field']],
  })
  async update(@AccountId() accountId: string, @Param('id') id: string, @Body() body: UpdatePhoneNumberDto) {
    const number =
      body.voice === undefined ? await this.numbers.get(accountId, id) : await this.numbers.setVoice(accountId, id, body.voice === null ? null : toVoiceSettings(body.voice));
    if (!number) throw numberNotFound();
    return { data: number };
  }

  @Get()
  @ApiOperationDoc({ summary: "List the account's phone numbers, newest first", ok: ListOf(PhoneNumberView), errors: [422] })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.numbers.list(accountId, page), page);
  }
}
