import { Body, Controller, Get, Headers, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiProperty, ApiPropertyOptional, ApiQuery, ApiTags } from '@nestjs/swagger';
import { IsBoolean, IsOptional, Matches } from 'class-validator';
import type { FastifyReply } from 'fastify';
import { AccountId, ApiKeyGuard } from '../accounts/api-key.guard.js';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { answerStored, parseIdempotencyKey } from '../../platform/idempotency/idempotency-keys.js';
import { CALL_DIRECTIONS, CALL_STATUSES } from './call-view.js';
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

@ApiTags('Calls')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('v2/calls')
export class CallsController {
  constructor(
    private readonly calls: CallsService,
    private readonly query: CallsQuery,
  ) {}

  @Post()
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Same key + same body replays the first response (24 h)' })
  async place(
    @AccountId() accountId: string,
    @Body() body: PlaceCallDto,
    @Headers('idempotency-key') keyHeader: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return answerStored(reply, await this.calls.place(accountId, { ...body }, parseIdempotencyKey(keyHeader)));
  }

  @Get(':id')
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.query.get(accountId, id) };
  }

  @Get(':id/timeline')
  async timeline(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.query.timelineOf(accountId, id) };
  }

  @Get()
  @ApiQuery({ name: 'status', required: false, enum: CALL_STATUSES })
  @ApiQuery({ name: 'direction', required: false, enum: CALL_DIRECTIONS })
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const status = optionalEnum(query, 'status', CALL_STATUSES);
    const direction = optionalEnum(query, 'direction', CALL_DIRECTIONS);
    return pageOf(await this.query.list(accountId, { status, direction }, page), page);
  }
}
