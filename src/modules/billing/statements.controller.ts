import { Controller, Get, Query } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, DataOf } from '../../platform/http/api-docs.js';
import { invalidParameter } from '../../platform/http/query-params.js';
import { StatementView } from './statement.dto.js';
import { Statements } from './statements.js';

@CustomerApi('Usage')
@Controller('v2/statements')
export class StatementsController {
  constructor(private readonly statements: Statements) {}

  @Get()
  @ApiOperationDoc({
    summary: 'The monthly statement: every charge of a calendar month with its cause',
    description:
      'Usage rows created in the month (UTC), oldest first, each with its cause and the balance of the bundle it drew; totals equal GET /v2/usage for the same [from, to), read in the same snapshot.',
    ok: DataOf(StatementView),
    errors: [422],
  })
  @ApiQuery({ name: 'period', required: true, schema: { type: 'string', pattern: '^\\d{4}-(0[1-9]|1[0-2])$' }, example: '2026-11' })
  async get(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const statement = typeof query.period === 'string' ? await this.statements.of(accountId, query.period) : undefined;
    if (!statement) throw invalidParameter('period', 'period must be a calendar month YYYY-MM');
    return { data: statement };
  }
}
