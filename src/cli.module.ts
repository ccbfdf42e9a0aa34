import { CarriersModule } from './carriers/carriers.module.js';
import { Module, type DynamicModule } from '@nestjs/common';
import type { CommandRunner } from 'nest-commander';
import { AccountsModule } from './modules/accounts/accounts.module.js';
import { CreateAccountCommand, CreateApiKeyCommand, LinkBillingCustomerCommand, RevokeApiKeyCommand } from './modules/accounts/commands/accounts.commands.js';
import { ProgramName } from './platform/cli/program-name.js';
import { AppConfig } from './platform/config/app-config.js';
import { ConfigModule } from './platform/config/config.module.js';
import { DatabaseModule } from './platform/database/database.module.js';
import { MigrateCommand } from './platform/database/commands/migrate.command.js';
import { EntitlementsModule } from './modules/entitlements/entitlements.module.js';
import { ListPlansCommand, UpsertPlanCommand } from './modules/entitlements/commands/plans.commands.js';
import { ListCarrierEventsCommand, ReplayCarrierEventsCommand } from './modules/ingest/commands/carrier-events.commands.js';
import { IngestModule } from './modules/ingest/ingest.module.js';
import { MessagingModule } from './modules/messaging/messaging.module.js';
import { MetricsModule } from './platform/metrics/metrics.module.js';
import { OutboxStatusCommand } from './platform/outbox/commands/outbox-status.command.js';
import { OutboxModule } from './platform/outbox/outbox.module.js';
import { RetentionStatusCommand } from './platform/retention/commands/retention-status.command.js';
import { RetentionModule } from './platform/retention/retention.module.js';
import { RedisModule } from './platform/redis/redis.module.js';
import { EnableEndpointCommand } from './modules/webhooks/commands/enable-endpoint.command.js';
import { VerifyCommand } from './platform/verify/verify.command.js';
import { VerifyModule } from './platform/verify/verify.module.js';
import { WebhooksModule } from './modules/webhooks/webhooks.module.js';
import { CallsModule } from './modules/calls/calls.module.js';
import { AuditCallsCommand } from './modules/calls/commands/audit-calls.command.js';
import { BillingModule } from './modules/billing/billing.module.js';
import { StatementsExportCommand } from './modules/billing/commands/statements-export.command.js';
import { UsageExportCommand } from './modules/billing/commands/usage-export.command.js';
import { AuditMessagesCommand } from './modules/messaging/commands/audit-messages.command.js';
import { NumbersModule } from './modules/numbers/numbers.module.js';
import {
  AssignNumberCommand, ImportNumbersCommand, OrderNumbersCommand, ReleaseNumberCommand, RetryReleaseCommand, RunRentalsCommand, SearchNumbersCommand,
} from './modules/numbers/commands/numbers.commands.js';

/** Every admin command, in the order `onceline --help` lists them. */
export const CLI_COMMANDS = [
  MigrateCommand, CreateAccountCommand, LinkBillingCustomerCommand, CreateApiKeyCommand, RevokeApiKeyCommand, OutboxStatusCommand, RetentionStatusCommand, ListCarrierEventsCommand, ReplayCarrierEventsCommand,
  EnableEndpointCommand, VerifyCommand, AuditCallsCommand, UpsertPlanCommand, ListPlansCommand, AssignNumberCommand, ImportNumbersCommand, OrderNumbersCommand, ReleaseNumberCommand,
  RetryReleaseCommand, RunRentalsCommand, SearchNumbersCommand, StatementsExportCommand, UsageExportCommand, AuditMessagesCommand,
];

/** The admin CLI: thin commands over the same services the API uses. */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: CliModule,
      imports: [ConfigModule.forRoot(config), CarriersModule, RedisModule, MetricsModule, DatabaseModule, VerifyModule, OutboxModule, RetentionModule, AccountsModule, IngestModule, WebhooksModule, MessagingModule, CallsModule, EntitlementsModule, NumbersModule, BillingModule],
      providers: [ProgramName, ...CLI_COMMANDS],
    };
  }

  /**
   * `migrate` runs before the database or its schema exists, so it boots without a connection
   * (forRoot lists it too, for --help).
   */
  static forMigrate(config: AppConfig): DynamicModule {
    return { module: CliModule, imports: [ConfigModule.forRoot(config)], providers: [ProgramName, MigrateCommand] };
  }

  /**
   * `--help` (of the CLI or of one command): nothing but the commands' declarations, so help
   * answers with no configuration, database or Redis. nest-commander builds the help from each
   * command's decorators (@Command, @Option), read off its class; the instances it is given are
   * never constructed (no services to inject) and refuse to run.
   */
  static forHelp(): DynamicModule {
    return { module: CliModule, providers: [ProgramName, ...CLI_COMMANDS.map((command) => ({ provide: command, useValue: helpOnly(command) }))] };
  }
}

/** An instance of `command` that nest-commander can read the declarations of but that cannot run. */
function helpOnly(command: (typeof CLI_COMMANDS)[number]): CommandRunner {
  const instance = Object.create(command.prototype) as CommandRunner;
  instance.run = () => Promise.reject(new Error('only help was asked for (--help), so no command ran; give --help alone or leave it out'));
  return instance;
}
