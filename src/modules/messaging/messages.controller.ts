import { Body, Controller, Get, Headers, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiProperty, ApiPropertyOptional, ApiQuery, ApiTags } from '@nestjs/swagger';
import { IsISO8601, IsOptional, IsString, Length, Matches } from 'class-validator';
import type { FastifyReply } from 'fastify';
import { AccountId, ApiKeyGuard } from '../accounts/api-key.guard.js';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { answerStored, parseIdempotencyKey } from '../../platform/idempotency/idempotency-keys.js';
import { MessagesQuery } from './messages.query.js';
import { MessagesService } from './messages.service.js';

export class SendMessageDto {
  @ApiProperty({ example: '+15550001111', description: 'One of your phone numbers' })
  @Matches(E164_PATTERN, { message: `from ${E164_MESSAGE}` })
  from: string;

  @ApiProperty({ example: '+15550002222' })
  @Matches(E164_PATTERN, { message: `to ${E164_MESSAGE}` })
  to: string;

  @ApiProperty({ example: 'Your code is 1234', minLength: 1, maxLength: 1600 })
  @IsString()
  @Length(1, 1600, { message: 'text must be 1 to 1600 characters' })
  text: string;

  @ApiPropertyOptional({ example: '2026-12-01T09:00:00Z', description: 'Future time (at most 30 days ahead) to send at' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'send_at must be an ISO 8601 date-time' })
  send_at?: string;
}

const DIRECTIONS = ['outbound', 'inbound'] as const;
const STATUSES = ['queued', 'scheduled', 'sending', 'sent', 'delivered', 'failed', 'received'] as const;

@ApiTags('Messages')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('v2/messages')
export class MessagesController {
  constructor(
    private readonly messages: MessagesService,
    private readonly query: MessagesQuery,
  ) {}

  @Post()
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Same key + same body replays the first response (24 h)' })
  async send(
    @AccountId() accountId: string,
    @Body() body: SendMessageDto,
    @Headers('idempotency-key') keyHeader: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return answerStored(reply, await this.messages.send(accountId, { ...body }, parseIdempotencyKey(keyHeader)));
  }

  @Get(':id')
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.query.get(accountId, id) };
  }

  @Get()
  @ApiQuery({ name: 'direction', required: false, enum: DIRECTIONS })
  @ApiQuery({ name: 'status', required: false, enum: STATUSES })
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const direction = optionalEnum(query, 'direction', DIRECTIONS);
    const status = optionalEnum(query, 'status', STATUSES);
    return pageOf(await this.query.list(accountId, { direction, status }, page), page);
  }
}

