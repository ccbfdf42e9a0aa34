import { Module } from '@nestjs/common';
import { AccountController } from './account.controller.js';
import { AccountsService } from './accounts.service.js';
import { BillingLinks } from './billing-links.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysController } from './api-keys.controller.js';
import { RateLimiter } from './rate-limiter.js';

@Module({
  controllers: [ApiKeysController, AccountController],
  providers: [AccountsService, BillingLinks, RateLimiter, ApiKeyGuard],
  exports: [AccountsService, BillingLinks, ApiKeyGuard, RateLimiter],
})
export class AccountsModule {}
