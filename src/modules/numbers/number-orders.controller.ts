import { Body, Controller, Get, Headers, Param, Post, Query, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { NUMBER_FEATURES } from '../../carriers/number-provider.js';
import { CARRIER_NAMES } from '../../carriers/carrier-name.js';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { answerStored, parseIdempotencyKey } from '../../platform/idempotency/idempotency-keys.js';
import { AvailablePhoneNumberView, NumberOrderView, PlaceNumberOrderDto } from './number-order.dto.js';
import { NumberOrders } from './number-orders.service.js';
import { MAX_SEARCH_LIMIT, NumberSearchService, parseSearch } from './number-search.js';

@CustomerApi('Phone numbers')
@Controller('v2/available_phone_numbers')
export class AvailablePhoneNumbersController {
  constructor(private readonly searching: NumberSearchService) {}

  @Get()
  @ApiOperationDoc({
    summary: 'Search numbers a carrier offers',
    description: 'Asks the carrier (Telnyx, Twilio or Vonage) and answers in one shape, with the monthly rental charged here. Order one with POST /v2/phone_number_orders.',
    ok: ListOf(AvailablePhoneNumberView),
    errors: [[422, 'A query parameter is invalid, or the carrier refused the search; source.parameter names it']],
  })
  @ApiQuery({ name: 'carrier', required: false, enum: CARRIER_NAMES, description: 'Default telnyx' })
  @ApiQuery({ name: 'country', required: false, example: 'US', description: 'ISO 3166-1 alpha-2; default US' })
  @ApiQuery({ name: 'area_code', required: false, example: '312' })
  @ApiQuery({ name: 'contains', required: false, example: '555', description: 'Digits the number contains' })
  @ApiQuery({ name: 'features', required: false, example: 'sms,voice', description: `Comma-separated: ${NUMBER_FEATURES.join(', ')}` })
  @ApiQuery({ name: 'limit', required: false, example: 10, description: `1 to ${MAX_SEARCH_LIMIT}; default 10` })
  async search(@Query() query: Record<string, unknown>) {
    return { data: await this.searching.search(parseSearch(query)), meta: { next_cursor: null } };
  }
}

@CustomerApi('Phone numbers')
@Controller('v2/phone_number_orders')
export class NumberOrdersController {
  constructor(private readonly orders: NumberOrders) {}

  @Post()
  @ApiOperationDoc({
    summary: 'Order numbers',
    description:
      'Orders numbers found by a search. The answer is the order, pending: the carrier is called after it is stored, and the numbers are configured to send their webhooks here. ' +
      'It moves to success (at least one number bought; each number says) or failed once, with the order.completed or order.failed event; a bought number is yours (active) from then on.',
    status: 202,
    body: PlaceNumberOrderDto,
    ok: DataOf(NumberOrderView),
    idempotent: true,
    errors: [[409, 'A number is held by another account or order (code phone_number_taken; source.pointer names it); nothing is ordered']],
  })
  async place(
    @AccountId() accountId: string,
    @Body() body: PlaceNumberOrderDto,
    @Headers('idempotency-key') keyHeader: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return answerStored(reply, await this.orders.place(accountId, { ...body }, parseIdempotencyKey(keyHeader)));
  }

  @Get(':id')
  @ApiOperationDoc({ summary: 'Get a number order', ok: DataOf(NumberOrderView), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.orders.get(accountId, id) };
  }

  @Get()
  @ApiOperationDoc({ summary: 'List number orders, newest first', ok: ListOf(NumberOrderView), errors: [422] })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.orders.list(accountId, page), page);
  }
}
