import { Module, type DynamicModule } from '@nestjs/common';
import { AccountsModule } from './accounts/accounts.module.js';
import { CreateAccountCommand, CreateApiKeyCommand, RevokeApiKeyCommand } from './accounts/commands/accounts.commands.js';
import { ProgramName } from './cli/program-name.js';
import { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { MigrateCommand } from './database/commands/migrate.command.js';
import { ListCarrierEventsCommand, ReplayCarrierEventsCommand } from './ingest/commands/carrier-events.commands.js';
import { IngestModule } from './ingest/ingest.module.js';
import { MessagingModule } from './messaging/messaging.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { OutboxStatusCommand } from './outbox/commands/outbox-status.command.js';
import { OutboxModule } from './outbox/outbox.module.js';
import { EnableEndpointCommand } from './webhooks/commands/enable-endpoint.command.js';
import { VerifyCommand } from './verify/verify.command.js';
import { VerifyModule } from './verify/verify.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

/** The admin CLI: thin commands over the same services the API uses. */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CliModule,
      imports: [ConfigModule.forRoot(config), MetricsModule, DatabaseModule, VerifyModule, OutboxModule, AccountsModule, IngestModule, WebhooksModule, MessagingModule],
      providers: [ProgramName, MigrateCommand, CreateAccountCommand, CreateApiKeyCommand, RevokeApiKeyCommand, OutboxStatusCommand, ListCarrierEventsCommand, ReplayCarrierEventsCommand, EnableEndpointCommand, VerifyCommand],
    };
  }

  /**
   * `migrate` runs before the database or its schema exists, so it boots without a connection
   * (forRoot lists it too, for --help).
   */
  static forMigrate(config: AppConfig): DynamicModule {
    return { module: CliModule, imports: [ConfigModule.forRoot(config)], providers: [ProgramName, MigrateCommand] };
  }
}
