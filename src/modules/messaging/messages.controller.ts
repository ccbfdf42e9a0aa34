import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { answerStored, parseIdempotencyKey } from '../../platform/idempotency/idempotency-keys.js';
import { SendMessageDto } from './message.dto.js';
import { MESSAGE_STATUSES, MessageView, MessageWithHistory } from './message-view.js';
import { MessagesQuery } from './messages.query.js';
import { MessagesService } from './messages.service.js';

const DIRECTIONS = ['outbound', 'inbound'] as const;

@CustomerApi('Messages')
@Controller('v2/messages')
export class MessagesController {
  constructor(
    private readonly messages: MessagesService,
    private readonly query: MessagesQuery,
  ) {}

  @Post()
  @ApiOperationDoc({
    summary: 'Send a message',
    description: 'Accepted for sending (or scheduled with send_at): the answer is the message as queued; its progress arrives as message.* events.',
    status: 202,
    body: SendMessageDto,
    ok: DataOf(MessageView),
    idempotent: true,
    errors: [[422, 'Validation failed: from not one of your numbers, send_at not in the next 30 days, ...; each errors[] entry names the field. recipient_opted_out: the handset replied STOP (or a synonym) to this number, or to any of your numbers when your account scope is account']],
  })
  async send(
    @AccountId() accountId: string,
    @Body() body: SendMessageDto,
    @Headers('idempotency-key') keyHeader: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return answerStored(reply, await this.messages.send(accountId, { ...body }, parseIdempotencyKey(keyHeader)));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @ApiOperationDoc({
    summary: 'Cancel a queued or scheduled message',
    description: 'Exactly one of cancelled or sent happens, whatever the timing against its dispatch: the answer is the message cancelled (message.cancelled, never billed), or 409 message_not_cancellable once dispatch has taken it.',
    ok: DataOf(MessageView),
    errors: [404, [409, 'message_not_cancellable: the message is already sending, sent, delivered, failed or cancelled']],
  })
  async cancel(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.messages.cancel(accountId, id) };
  }

  @Delete(':id')
  @ApiOperationDoc({ summary: 'Cancel a queued or scheduled message (as POST /v2/messages/{id}/cancel)', ok: DataOf(MessageView), errors: [404, [409, 'message_not_cancellable']] })
  async remove(@AccountId() accountId: string, @Param('id') id: string) {
    return this.cancel(accountId, id);
  }

  @Get(':id')
  @ApiOperationDoc({ summary: 'Get a message with its status history', ok: DataOf(MessageWithHistory), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.query.get(accountId, id) };
  }

  @Get()
  @ApiOperationDoc({ summary: 'List messages, newest first', ok: ListOf(MessageView), errors: [422] })
  @ApiQuery({ name: 'direction', required: false, enum: DIRECTIONS })
  @ApiQuery({ name: 'status', required: false, enum: MESSAGE_STATUSES })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const direction = optionalEnum(query, 'direction', DIRECTIONS);
    const status = optionalEnum(query, 'status', MESSAGE_STATUSES);
    return pageOf(await this.query.list(accountId, { direction, status }, page), page);
  }
}
