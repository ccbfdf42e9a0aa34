import { Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { EventView, EventWithDeliveriesView } from './endpoint.dto.js';
import { CUSTOMER_EVENT_TYPES } from './event-types.js';
import { EventsService } from './events.service.js';

@CustomerApi('Events')
@Controller('v2/events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOperationDoc({ summary: 'Customer events, newest first', ok: ListOf(EventView), errors: [422] })
  @ApiQuery({ name: 'type', required: false, schema: { type: 'string', enum: CUSTOMER_EVENT_TYPES as string[] } })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const type = optionalEnum(query, 'type', CUSTOMER_EVENT_TYPES);
    const page = parsePage(query);
    return pageOf(await this.events.list(accountId, type, page), page);
  }

  @Get(':id')
  @ApiOperationDoc({ summary: 'One event with its deliveries and their attempts', ok: DataOf(EventWithDeliveriesView), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.events.get(accountId, id) };
  }

  @Post(':id/redeliver')
  @ApiOperationDoc({
    summary: 'Deliver again',
    description: 'New attempts with the same event id (webhook-id) to every enabled endpoint subscribed to its type.',
    status: 202,
    ok: DataOf(EventWithDeliveriesView),
    errors: [404],
  })
  async redeliver(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.events.redeliver(accountId, id) };
  }
}
