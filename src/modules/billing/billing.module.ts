import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { BillableResources, BillingInvariants } from './billing-invariants.js';
import { UsageController } from './usage.controller.js';
import { UsageLedger } from './usage-ledger.js';

/** The usage ledger and its read API; other modules record usage through UsageLedger only. */
@Module({ imports: [AccountsModule], controllers: [UsageController], providers: [UsageLedger, BillableResources, BillingInvariants], exports: [UsageLedger, BillableResources] })
export class BillingModule {}
