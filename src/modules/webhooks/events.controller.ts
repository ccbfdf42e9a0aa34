import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { AccountId, ApiKeyGuard } from '../accounts/api-key.guard.js';
import { MAX_PAGE_SIZE, pageOf, parsePage } from '../../platform/http/pagination.js';
import { EventListResponse, EventResponse } from './endpoint.dto.js';
import { CUSTOMER_EVENT_TYPES } from './event-types.js';
import { EventsService } from './events.service.js';
import { optionalEnum } from '../../platform/http/query-params.js';

@ApiTags('Events')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'Missing or invalid API key' })
@UseGuards(ApiKeyGuard)
@Controller('v2/events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @ApiOperation({ summary: 'Customer events, newest first' })
  @ApiQuery({ name: 'type', required: false, enum: CUSTOMER_EVENT_TYPES })
  @ApiQuery({ name: 'page[size]', required: false, example: 50, description: `1..${MAX_PAGE_SIZE}` })
  @ApiQuery({ name: 'page[after]', required: false, description: 'meta.next_cursor of the previous page' })
  @ApiOkResponse({ type: EventListResponse })
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const type = optionalEnum(query, 'type', CUSTOMER_EVENT_TYPES);
    const page = parsePage(query);
    return pageOf(await this.events.list(accountId, type, page), page);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One event with its deliveries and their attempts' })
  @ApiOkResponse({ type: EventResponse })
  @ApiNotFoundResponse()
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.events.get(accountId, id) };
  }

  @Post(':id/redeliver')
  @HttpCode(202)
  @ApiOperation({ summary: 'Deliver again', description: 'New attempts with the same event id (webhook-id) to every enabled endpoint subscribed to its type.' })
  @ApiAcceptedResponse({ type: EventResponse })
  @ApiNotFoundResponse()
  async redeliver(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.events.redeliver(accountId, id) };
  }
}
