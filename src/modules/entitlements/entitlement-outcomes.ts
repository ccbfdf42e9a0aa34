import { Injectable } from '@nestjs/common';
import type { BillingEvent } from '../../carriers/billing-event.js';
import { assertInTransaction, exec, type Tx } from '../../platform/database/tx.js';
import type { Grant } from './grants.js';

export type OutcomeKind = 'applied' | 'already_applied' | 'conflicting_payload' | 'ignored';

/** What one delivery did about one entitlement (or, without one, a note on what it ignored). */
export interface OutcomeRecord {
  outcome: OutcomeKind;
  accountId?: string;
  invoiceId?: string;
  entitlementId?: string;
  /** The grant the delivery asked for. */
  offered?: Grant;
  note?: string;
}

/** The record of every decision a billing delivery led to, written in the decision's transaction. */
@Injectable()
export class EntitlementOutcomes {
  async record(tx: Tx, event: BillingEvent, outcomes: OutcomeRecord[]): Promise<void> {
    assertInTransaction(tx);
    if (outcomes.length === 0) return;
    const rows = outcomes.map((o) => ({
      account_id: o.accountId ?? null,
      invoice_id: o.invoiceId ?? null,
      type: o.offered?.type ?? null,
      entitlement_id: o.entitlementId ?? null,
      outcome: o.outcome,
      offered: o.offered ?? null,
      note: o.note ?? null,
    }));
    // Plain inserts; entitlement_outcomes_applied_idx refuses a second `applied` of one entitlement.
    await exec(
      tx,
      `INSERT INTO entitlement_outcomes (provider, provider_event_id, account_id, invoice_id, type, entitlement_id, outcome, offered, note)
       SELECT $1, $2, r.account_id, r.invoice_id, r.type, r.entitlement_id, r.outcome, r.offered, r.note
         FROM jsonb_to_recordset($3::jsonb) AS r(account_id text, invoice_id text, type text, entitlement_id text, outcome text, offered jsonb, note text)`,
      [event.provider, event.providerEventId, JSON.stringify(rows)],
    );
  }
}
