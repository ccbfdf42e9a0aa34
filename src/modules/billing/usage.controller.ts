import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { AccountId, ApiKeyGuard } from '../accounts/api-key.guard.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalDate } from '../../platform/http/query-params.js';
import { UsageLedger } from './usage-ledger.js';

@ApiTags('Usage')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('v2/usage')
export class UsageController {
  constructor(private readonly ledger: UsageLedger) {}

  @Get()
  @ApiQuery({ name: 'from', required: false, example: '2026-11-01T00:00:00Z' })
  @ApiQuery({ name: 'to', required: false, example: '2026-12-01T00:00:00Z' })
  async summary(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    return { data: await this.ledger.summary(accountId, optionalDate(query, 'from'), optionalDate(query, 'to')) };
  }

  @Get('records')
  async records(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.ledger.list(accountId, page), page);
  }
}
