import { Controller, Get, Query } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalDate } from '../../platform/http/query-params.js';
import { UsageRecordView, UsageSummary } from './usage.dto.js';
import { UsageLedger } from './usage-ledger.js';

@CustomerApi('Usage')
@Controller('v2/usage')
export class UsageController {
  constructor(private readonly ledger: UsageLedger) {}

  @Get()
  @ApiOperationDoc({ summary: 'Usage totals over a period', description: 'Ledger rows created in [from, to); both optional.', ok: DataOf(UsageSummary), errors: [422] })
  @ApiQuery({ name: 'from', required: false, schema: { type: 'string', format: 'date-time' }, example: '2026-11-01T00:00:00Z' })
  @ApiQuery({ name: 'to', required: false, schema: { type: 'string', format: 'date-time' }, example: '2026-12-01T00:00:00Z' })
  async summary(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    return { data: await this.ledger.summary(accountId, optionalDate(query, 'from'), optionalDate(query, 'to')) };
  }

  @Get('records')
  @ApiOperationDoc({ summary: 'The usage ledger, newest first', ok: ListOf(UsageRecordView), errors: [422] })
  @ApiPageQuery()
  async records(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.ledger.list(accountId, page), page);
  }
}
