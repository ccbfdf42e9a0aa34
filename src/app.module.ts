import { Module, type DynamicModule } from '@nestjs/common';
import { AccountsModule } from './modules/accounts/accounts.module.js';
import { AppConfig } from './platform/config/app-config.js';
import { ConfigModule } from './platform/config/config.module.js';
import { DatabaseModule } from './platform/database/database.module.js';
import { EntitlementsModule } from './modules/entitlements/entitlements.module.js';
import { HealthModule } from './platform/health/health.module.js';
import { IngestModule } from './modules/ingest/ingest.module.js';
import { MessagingModule } from './modules/messaging/messaging.module.js';
import { MetricsModule } from './platform/metrics/metrics.module.js';
import { NumbersModule } from './modules/numbers/numbers.module.js';
import { BillingModule } from './modules/billing/billing.module.js';
import { CallsModule } from './modules/calls/calls.module.js';
import { SequentialRingModule } from './modules/sequential-ring/sequential-ring.module.js';
import { OutboxModule } from './platform/outbox/outbox.module.js';
import { VerifyModule } from './platform/verify/verify.module.js';
import { RedisModule } from './platform/redis/redis.module.js';
import { WebhooksModule } from './modules/webhooks/webhooks.module.js';

/** Every module; which loops run (HTTP, relay, workers) is decided by the role in main.ts. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ConfigModule.forRoot(config), RedisModule, MetricsModule, DatabaseModule, VerifyModule, OutboxModule, AccountsModule, HealthModule, IngestModule, NumbersModule, BillingModule, MessagingModule, WebhooksModule, SequentialRingModule, CallsModule, EntitlementsModule],
    };
  }
}
