import { Body, Controller, Get, Headers, Param, Post, Query, Res } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiQuery, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsOptional, Matches } from 'class-validator';
import type { FastifyReply } from 'fastify';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { answerStored, parseIdempotencyKey } from '../../platform/idempotency/idempotency-keys.js';
import { TimelineEntry } from './call-timeline.js';
import { CALL_DIRECTIONS, CALL_STATUSES, CallView } from './call-view.js';
import { CallsQuery } from './calls.query.js';
import { CallsService } from './calls.service.js';

export class PlaceCallDto {
  @ApiProperty({ example: '+15550001111', description: 'One of your phone numbers (a Telnyx one)' })
  @Matches(E164_PATTERN, { message: `from ${E164_MESSAGE}` })
  from!: string;

  @ApiProperty({ example: '+15550002222' })
  @Matches(E164_PATTERN, { message: `to ${E164_MESSAGE}` })
  to!: string;

  @ApiPropertyOptional({ default: false, description: 'Transcribe the call once answered (call.transcribed)' })
  @IsOptional() @IsBoolean({ message: 'transcribe must be true or false' })
  transcribe?: boolean;
}

/** `{"data": [timeline entries]}`: the whole timeline of one call, in arrival order. */
@ApiSchema({ name: 'CallTimeline' })
class TimelineResponse {
  @ApiProperty({ type: [TimelineEntry], description: 'In the order the carrier events arrived' }) data!: TimelineEntry[];
}

@CustomerApi('Calls')
@Controller('v2/calls')
export class CallsController {
  constructor(
    private readonly calls: CallsService,
    private readonly query: CallsQuery,
  ) {}

  @Post()
  @ApiOperationDoc({
    summary: 'Place an outbound call',
    description: 'Dialed from one of your Telnyx numbers; the answer is the call as it starts ringing, its progress arrives as call.* events.',
    status: 202,
    body: PlaceCallDto,
    ok: DataOf(CallView),
    idempotent: true,
    errors: [[422, 'Validation failed: from not one of your Telnyx numbers, ...; each errors[] entry names the field']],
  })
  async place(
    @AccountId() accountId: string,
    @Body() body: PlaceCallDto,
    @Headers('idempotency-key') keyHeader: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return answerStored(reply, await this.calls.place(accountId, { ...body }, parseIdempotencyKey(keyHeader)));
  }

  @Get(':id')
  @ApiOperationDoc({ summary: 'Get a call with its legs', ok: DataOf(CallView), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.query.get(accountId, id) };
  }

  @Get(':id/timeline')
  @ApiOperationDoc({
    summary: "A call's carrier events and what each did",
    description: 'Every carrier event of the call in arrival order, each applied, duplicate, superseded or ignored.',
    ok: TimelineResponse,
    errors: [404],
  })
  async timeline(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.query.timelineOf(accountId, id) };
  }

  @Get()
  @ApiOperationDoc({ summary: 'List calls, newest first', ok: ListOf(CallView), errors: [422] })
  @ApiQuery({ name: 'status', required: false, enum: CALL_STATUSES })
  @ApiQuery({ name: 'direction', required: false, enum: CALL_DIRECTIONS })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const status = optionalEnum(query, 'status', CALL_STATUSES);
    const direction = optionalEnum(query, 'direction', CALL_DIRECTIONS);
    return pageOf(await this.query.list(accountId, { status, direction }, page), page);
  }
}
