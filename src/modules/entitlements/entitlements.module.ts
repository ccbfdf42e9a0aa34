import { Module } from '@nestjs/common';
import { CarriersModule } from '../../carriers/carriers.module.js';
import { AccountsModule } from '../accounts/accounts.module.js';
import { BillingModule } from '../billing/billing.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { Balances } from './balances.js';
import { BillingEvents } from './billing-events.js';
import { BillingWebhookController } from './billing-webhook.controller.js';
import { BillingWebhookService } from './billing-webhook.service.js';
import { EntitlementOutcomes } from './entitlement-outcomes.js';
import { EntitlementsController } from './entitlements.controller.js';
import { EntitlementsInvariants } from './entitlements-invariants.js';
import { EntitlementsQuery } from './entitlements.query.js';
import { InvoiceGrants } from './invoice-grants.js';
import { Plans } from './plans.js';
// The customer event types this module emits (webhooks delivers them, knowing none by name).
import './entitlements.events.js';

/**
 * Prepaid bundles from paid invoices: the billing webhook (Stripe), plans, grants guarded by
 * their business key, and balances computed from grants and Billing's usage ledger.
 */
@Module({
  imports: [AccountsModule, BillingModule, CarriersModule, WebhooksModule],
  controllers: [BillingWebhookController, EntitlementsController],
  providers: [BillingWebhookService, BillingEvents, InvoiceGrants, EntitlementOutcomes, Plans, EntitlementsQuery, Balances, EntitlementsInvariants],
  exports: [Plans],
})
export class EntitlementsModule {}
