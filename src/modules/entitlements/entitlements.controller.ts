import { Controller, Get, Query } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { BalanceListResponse, Balances } from './balances.js';
import { ENTITLEMENT_TYPES } from './entitlement-types.js';
import { EntitlementView } from './entitlement-view.js';
import { EntitlementsQuery } from './entitlements.query.js';

@CustomerApi('Entitlements')
@Controller('v2')
export class EntitlementsController {
  constructor(
    private readonly entitlements: EntitlementsQuery,
    private readonly balances: Balances,
  ) {}

  @Get('entitlements')
  @ApiOperationDoc({ summary: 'List the prepaid bundles paid invoices granted, newest first', ok: ListOf(EntitlementView), errors: [422] })
  @ApiQuery({ name: 'type', required: false, enum: ENTITLEMENT_TYPES })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.entitlements.list(accountId, page, optionalEnum(query, 'type', ENTITLEMENT_TYPES)), page);
  }

  @Get('balances')
  @ApiOperationDoc({
    summary: 'Granted, used, remaining and overage per bundle type',
    description: 'Computed from the grants and the usage ledger on every read; usage since the first grant of a type draws it down.',
    ok: BalanceListResponse,
  })
  async balancesOf(@AccountId() accountId: string) {
    return { data: await this.balances.forAccount(accountId) };
  }
}
