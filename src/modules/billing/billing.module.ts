import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { RetentionModule } from '../../platform/retention/retention.module.js';
import { BillableResources, BillingInvariants } from './billing-invariants.js';
import { UsageController } from './usage.controller.js';
import { UsageLedger } from './usage-ledger.js';
import { PrepaidBundles } from './prepaid-bundles.js';
import { UsageRecords } from './usage-records.js';
import { Statements } from './statements.js';
import { UsageExports } from './usage-export.js';
import { UsageRetention } from './usage-retention.js';
import { StatementsController } from './statements.controller.js';

/** The usage ledger and its read API; other modules record usage through UsageLedger only. */
@Module({
  imports: [AccountsModule, RetentionModule],
  controllers: [UsageController, StatementsController],
  providers: [UsageLedger, UsageRecords, Statements, PrepaidBundles, BillableResources, BillingInvariants, UsageExports, UsageRetention],
  exports: [UsageLedger, BillableResources, PrepaidBundles, Statements, UsageExports],
})
export class BillingModule {}
