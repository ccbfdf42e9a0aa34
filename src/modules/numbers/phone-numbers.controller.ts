import { Body, Controller, Delete, Get, HttpException, HttpStatus, NotFoundException, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { toVoiceSettings } from '../sequential-ring/voice-settings.dto.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { PhoneNumberView, UpdatePhoneNumberDto } from './phone-number.dto.js';
import { PhoneNumbers } from './phone-numbers.service.js';
import { NumberReleases } from './number-releases.js';

function numberNotFound(): NotFoundException {
  return new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no phone number with this id' });
}

const REGISTRATION_RETIRED = {
  code: 'method_not_allowed',
  title: 'Numbers are ordered, not registered',
  detail:
    'Search with GET /v2/available_phone_numbers and order with POST /v2/phone_number_orders; a number the platform already holds is assigned by an operator: onceline numbers:assign --account <id> --number <E.164> --carrier telnyx|twilio|vonage',
  meta: { search: 'GET /v2/available_phone_numbers', order: 'POST /v2/phone_number_orders', operator_command: 'numbers:assign' },
};

@CustomerApi('Phone numbers')
@Controller('v2/phone_numbers')
export class PhoneNumbersController {
  constructor(
    private readonly numbers: PhoneNumbers,
    private readonly releases: NumberReleases,
  ) {}

  /**
   * The first-come registration is retired: numbers are ordered, or assigned by an operator.
   * Left out of the description (an operation with no success is no operation); the contract
   * names the 405.
   */
  @Post()
  @ApiExcludeEndpoint()
  retiredRegistration(): never {
    throw new HttpException({ errors: [REGISTRATION_RETIRED] }, HttpStatus.METHOD_NOT_ALLOWED);
  }

  @Get(':id')
  @ApiOperationDoc({ summary: 'Get a phone number with its voice settings', ok: DataOf(PhoneNumberView), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    const number = await this.numbers.get(accountId, id);
    if (!number) throw numberNotFound();
    return { data: number };
  }

  /**
   * Voice settings: `{"voice": {...}}` sets them, `{"voice": null}` switches calls off. Sending
   * pace: `{"messaging": {"send_rate_per_second": N}}` sets it, `null` goes back to the default.
   * `{}` changes nothing.
   */
  @Patch(':id')
  @ApiOperationDoc({
    summary: "Set a number's voice settings and sending pace",
    description:
      '`{"voice": {...}}` sets the ring plan and transcription, `{"voice": null}` switches calls off; `{"messaging": {"send_rate_per_second": 10}}` sets the segments per second it sends at most, `{"messaging": {"send_rate_per_second": null}}` goes back to the default for its carrier and type; a setting left out is kept, `{}` changes nothing.',
    body: UpdatePhoneNumberDto,
    ok: DataOf(PhoneNumberView),
    errors: [404, [422, 'Validation failed: 1 to 10 E.164 targets, timeout_secs 5 to 120, a known fallback (forward with its to), send_rate_per_second 0.01 to 1000 or null; each errors[] entry names the field']],
  })
  async update(@AccountId() accountId: string, @Param('id') id: string, @Body() body: UpdatePhoneNumberDto) {
    const change = {
      ...(body.voice !== undefined && { voice: body.voice === null ? null : toVoiceSettings(body.voice) }),
      ...(body.messaging !== undefined && { sendRatePerSecond: body.messaging.send_rate_per_second }),
    };
    const number = Object.keys(change).length === 0 ? await this.numbers.get(accountId, id) : await this.numbers.update(accountId, id, change);
    if (!number) throw numberNotFound();
    return { data: number };
  }

  @Delete(':id')
  @ApiOperationDoc({
    summary: 'Release a phone number',
    description:
      'It stops routing at once (status releasing) and is released at the carrier once no call on it is in progress (status released, event number.released once). Repeating it changes nothing.',
    status: 202,
    ok: DataOf(PhoneNumberView),
    errors: [404, [409, 'The number is still being ordered (code order_in_progress)']],
  })
  async release(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.releases.request(accountId, id) };
  }

  @Get()
  @ApiOperationDoc({ summary: "List the account's phone numbers, newest first", ok: ListOf(PhoneNumberView), errors: [422] })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.numbers.list(accountId, page), page);
  }
}
