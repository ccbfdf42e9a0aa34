import { Module, type DynamicModule } from '@nestjs/common';
import { AccountsModule } from './accounts/accounts.module.js';
import { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { HealthModule } from './health/health.module.js';
import { IngestModule } from './ingest/ingest.module.js';
import { MessagingModule } from './messaging/messaging.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { NumbersModule } from './numbers/numbers.module.js';
import { BillingModule } from './billing/billing.module.js';
import { OutboxModule } from './outbox/outbox.module.js';
import { VerifyModule } from './verify/verify.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

/** Every module; which loops run (HTTP, relay, workers) is decided by the role in main.ts. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ConfigModule.forRoot(config), MetricsModule, DatabaseModule, VerifyModule, OutboxModule, AccountsModule, HealthModule, IngestModule, NumbersModule, BillingModule, MessagingModule, WebhooksModule],
    };
  }
}
