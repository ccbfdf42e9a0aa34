import { Controller, Get, Param } from '@nestjs/common';
import { ApiOperationDoc, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { AccountId } from './api-key.guard.js';
import { AccountsService } from './accounts.service.js';
import { ApiKeyView } from './api-key.dto.js';
import { CustomerApi } from './customer-api.js';

@CustomerApi('API keys')
@Controller('v2/api_keys')
export class ApiKeysController {
  constructor(private readonly accounts: AccountsService) {}

  @Get()
  @ApiOperationDoc({ summary: "List the account's API keys, newest first", description: 'Every key, revoked ones included, on one page.', ok: ListOf(ApiKeyView) })
  async list(@AccountId() accountId: string) {
    return { data: await this.accounts.listApiKeys(accountId), meta: { next_cursor: null } };
  }

  @Get(':id')
  @ApiOperationDoc({ summary: 'Get an API key', ok: DataOf(ApiKeyView), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.accounts.getApiKey(accountId, id) };
  }
}
