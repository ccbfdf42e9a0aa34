import { Controller, Get, Param, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { AccountsService } from './accounts.service.js';
import { AccountId, ApiKeyGuard } from './api-key.guard.js';

@ApiTags('API keys')
@ApiBearerAuth()
@UseGuards(ApiKeyGuard)
@Controller('v2/api_keys')
export class ApiKeysController {
  constructor(private readonly accounts: AccountsService) {}

  @Get()
  async list(@AccountId() accountId: string) {
    return { data: await this.accounts.listApiKeys(accountId), meta: { next_cursor: null } };
  }

  @Get(':id')
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.accounts.getApiKey(accountId, id) };
  }
}
