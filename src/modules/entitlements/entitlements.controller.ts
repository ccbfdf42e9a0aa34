import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiQuery, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { AccountId, ApiKeyGuard } from '../accounts/api-key.guard.js';
import { MAX_PAGE_SIZE, pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { Balances, BalanceView } from './balances.js';
import { ENTITLEMENT_TYPES } from './entitlement-types.js';
import { EntitlementView } from './entitlement-view.js';
import { EntitlementsQuery } from './entitlements.query.js';

class ListMeta {
  @ApiProperty({ nullable: true, example: null, description: 'Pass as page[after] for the next page' }) next_cursor!: string | null;
}
class EntitlementListResponse { @ApiProperty({ type: [EntitlementView] }) data!: EntitlementView[]; @ApiProperty({ type: ListMeta }) meta!: ListMeta; }
class BalanceListResponse { @ApiProperty({ type: [BalanceView] }) data!: BalanceView[]; }

@ApiTags('Entitlements')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'Missing or invalid API key' })
@UseGuards(ApiKeyGuard)
@Controller('v2')
export class EntitlementsController {
  constructor(
    private readonly entitlements: EntitlementsQuery,
    private readonly balances: Balances,
  ) {}

  @Get('entitlements')
  @ApiOperation({ summary: 'Prepaid bundles granted by paid invoices, newest first' })
  @ApiQuery({ name: 'type', required: false, enum: ENTITLEMENT_TYPES })
  @ApiQuery({ name: 'page[size]', required: false, example: 50, description: `1..${MAX_PAGE_SIZE}` })
  @ApiQuery({ name: 'page[after]', required: false, description: 'meta.next_cursor of the previous page' })
  @ApiOkResponse({ type: EntitlementListResponse })
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.entitlements.list(accountId, page, optionalEnum(query, 'type', ENTITLEMENT_TYPES)), page);
  }

  @Get('balances')
  @ApiOperation({ summary: 'Granted, used and remaining units per bundle type', description: 'Computed from the grants and the usage ledger on every read; usage since the first grant of a type draws it down.' })
  @ApiOkResponse({ type: BalanceListResponse })
  async balancesOf(@AccountId() accountId: string) {
    return { data: await this.balances.forAccount(accountId) };
  }
}
