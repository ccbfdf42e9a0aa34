import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalDate, optionalEnum } from '../../platform/http/query-params.js';
import { UsageRecordView, UsageRecordWithCauseView, UsageSummary } from './usage.dto.js';
import { UsageLedger } from './usage-ledger.js';
import { UsageRecords } from './usage-records.js';

@CustomerApi('Usage')
@Controller('v2/usage')
export class UsageController {
  constructor(
    private readonly ledger: UsageLedger,
    private readonly usageRecords: UsageRecords,
  ) {}

  @Get()
  @ApiOperationDoc({ summary: 'Usage totals over a period', description: 'Ledger rows created in [from, to); both optional.', ok: DataOf(UsageSummary), errors: [422] })
  @ApiQuery({ name: 'from', required: false, schema: { type: 'string', format: 'date-time' }, example: '2026-11-01T00:00:00Z' })
  @ApiQuery({ name: 'to', required: false, schema: { type: 'string', format: 'date-time' }, example: '2026-12-01T00:00:00Z' })
  async summary(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    return { data: await this.ledger.summary(accountId, optionalDate(query, 'from'), optionalDate(query, 'to')) };
  }

  @Get('records')
  @ApiOperationDoc({ summary: 'The usage ledger, newest first', description: 'include=causes adds each row\'s cause (as GET /v2/usage/records/{id} shows it).', ok: ListOf(UsageRecordView), errors: [422] })
  @ApiQuery({ name: 'include', required: false, enum: ['causes'] })
  @ApiPageQuery()
  async records(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    const include = optionalEnum(query, 'include', ['causes'] as const);
    return pageOf(await this.usageRecords.list(accountId, page, include === 'causes'), page);
  }

  @Get('records/:id')
  @ApiOperationDoc({
    summary: 'One usage row and what caused it',
    description: 'The resource billed, the carrier events whose guarded transition wrote the row (ours and the carrier\'s ids), the transition, the price rule, and the bundles it drew down.',
    ok: DataOf(UsageRecordWithCauseView),
    errors: [404],
  })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.usageRecords.get(accountId, id) };
  }
}
