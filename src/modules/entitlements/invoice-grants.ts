import { Injectable } from '@nestjs/common';
import type { BillingEvent, PaidInvoice } from '../../carriers/billing-event.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { IdPrefix, newId } from '../../platform/ids.js';
import { AccountsService } from '../accounts/accounts.service.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import { EntitlementOutcomes, type OutcomeRecord } from './entitlement-outcomes.js';
import { ENTITLEMENT_COLUMNS, toEntitlementView, type EntitlementView } from './entitlement-view.js';
import { grantsFor, type Grant, type IgnoredLine } from './grants.js';
import { Plans } from './plans.js';

/** How long a delivery waits for a concurrent one holding the same entitlement key before it is retryable. */
const TWIN_WAIT = '10s';

/** The same key granted otherwise: what is stored, and what this delivery asked for. */
export interface GrantConflict {
  type: Grant['type'];
  entitlement_id: string;
  stored: { quantity: number; period_start: string; period_end: string };
  offered: { quantity: number; period_start: string; period_end: string };
}

export type GrantResult =
  | { outcome: 'applied' | 'already_applied'; entitlements: EntitlementView[]; ignored_lines: IgnoredLine[] }
  | { outcome: 'conflicting_payload'; conflicts: GrantConflict[] }
  | { outcome: 'ignored'; reason: string; ignored_lines: IgnoredLine[] };

/** What the guarded insert returned: the row it inserted, or the existing row it waited for and locked. */
type ClaimedRow = Parameters<typeof toEntitlementView>[0] & { inserted: boolean; fingerprint: string };

/** Thrown inside the grant's transaction to roll back everything it did; the conflict is recorded after. */
class ConflictingGrant extends Error {
  constructor(
    readonly accountId: string,
    readonly conflicts: { grant: Grant; stored: EntitlementView }[],
  ) {
    super('conflicting payload');
  }
}

/**
 * A paid invoice becomes prepaid bundles, each granted once. The guard is the entitlement's
 * business key, UNIQUE (account_id, invoice_id, type), never the provider's event id: a re-sent
 * notification carries a new one. Entitlement, `applied` outcome and `entitlement.granted` commit
 * together; a replay returns the stored entitlement; a disagreeing one changes nothing.
 */
@Injectable()
export class InvoiceGrants {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly accounts: AccountsService,
    private readonly plans: Plans,
    private readonly outcomes: EntitlementOutcomes,
    private readonly events: CustomerEvents,
  ) {}

  async apply(event: BillingEvent, invoice: PaidInvoice): Promise<GrantResult> {
    try {
      return await this.uow.run((tx) => this.grant(tx, event, invoice));
    } catch (err) {
      if (!(err instanceof ConflictingGrant)) throw err;
      // The grant rolled back whole; what it collided with is recorded on its own.
      await this.uow.run((tx) =>
        this.outcomes.record(
          tx,
          event,
          err.conflicts.map(({ grant, stored }) => ({
            outcome: 'conflicting_payload',
            accountId: err.accountId,
            invoiceId: invoice.invoiceId,
            entitlementId: stored.id,
            offered: grant,
            note: `entitlement ${stored.id} was granted with another ${grant.type} quantity or period; nothing changed`,
          })),
        ),
      );
      return { outcome: 'conflicting_payload', conflicts: err.conflicts.map(({ grant, stored }) => describeConflict(grant, stored)) };
    }
  }

  private async grant(tx: Tx, event: BillingEvent, invoice: PaidInvoice): Promise<GrantResult> {
    await exec(tx, `SET LOCAL lock_timeout = '${TWIN_WAIT}'`);
    const accountId = await this.accounts.accountIdForBillingCustomer(tx, invoice.customerId);
    if (!accountId) {
      const reason = `no account has billing customer ${invoice.customerId}`;
      await this.outcomes.record(tx, event, [{ outcome: 'ignored', invoiceId: invoice.invoiceId, note: reason }]);
      return { outcome: 'ignored', reason, ignored_lines: [] };
    }
    const plans = await this.plans.forLookupKeys(tx, [...new Set(invoice.lines.map((l) => l.lookupKey))]);
    const { grants, ignored } = grantsFor(invoice, plans);
    const notes: OutcomeRecord[] = ignored.map((line) => ({
      outcome: 'ignored',
      accountId,
      invoiceId: invoice.invoiceId,
      note: line.lookup_key === null ? line.reason : `lookup_key ${line.lookup_key}: ${line.reason}`,
    }));
    if (grants.length === 0) {
      await this.outcomes.record(tx, event, notes.length > 0 ? notes : [{ outcome: 'ignored', accountId, invoiceId: invoice.invoiceId, note: 'the invoice has no line with a price lookup_key' }]);
      return { outcome: 'ignored', reason: 'no line of the invoice grants anything', ignored_lines: ignored };
    }

    const claimed: { grant: Grant; row: ClaimedRow }[] = [];
    for (const grant of grants) claimed.push({ grant, row: await this.claim(tx, accountId, invoice.invoiceId, grant, event) });
    const conflicts = claimed.filter(({ grant, row }) => !row.inserted && row.fingerprint !== grant.fingerprint);
    if (conflicts.length > 0) throw new ConflictingGrant(accountId, conflicts.map(({ grant, row }) => ({ grant, stored: toEntitlementView(row) })));

    const records: OutcomeRecord[] = [...notes];
    for (const { grant, row } of claimed) {
      const entitlement = toEntitlementView(row);
      records.push({ outcome: row.inserted ? 'applied' : 'already_applied', accountId, invoiceId: invoice.invoiceId, entitlementId: entitlement.id, offered: grant });
      // Only the statement that inserted the row announces it.
      if (row.inserted) await this.events.emit(tx, accountId, 'entitlement.granted', entitlement);
    }
    await this.outcomes.record(tx, event, records);
    return {
      outcome: claimed.some(({ row }) => row.inserted) ? 'applied' : 'already_applied',
      entitlements: claimed.map(({ row }) => toEntitlementView(row)),
      ignored_lines: ignored,
    };
  }

  /**
   * The guard, one statement: inserts the entitlement, or, when its key exists, waits for the
   * transaction holding it (a concurrent delivery) and then locks and returns the committed row
   * (DO UPDATE locks and returns a row this statement's snapshot may not see; DO NOTHING would
   * return nothing and leave a later SELECT to guess). If that transaction rolls back, this one
   * inserts: no "processing" claim outlives its transaction. `inserted`: the row carries our id.
   */
  private async claim(tx: Tx, accountId: string, invoiceId: string, grant: Grant, event: BillingEvent): Promise<ClaimedRow> {
    const id = newId(IdPrefix.Entitlement);
    const { rows } = await exec<ClaimedRow>(
      tx,
      `INSERT INTO entitlements AS e (id, account_id, invoice_id, type, quantity, period_start, period_end, fingerprint, provider, provider_event_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (account_id, invoice_id, type) DO UPDATE SET fingerprint = e.fingerprint
       RETURNING ${ENTITLEMENT_COLUMNS}, e.id = $1 AS inserted, e.fingerprint`,
      [id, accountId, invoiceId, grant.type, grant.quantity, grant.periodStart, grant.periodEnd, grant.fingerprint, event.provider, event.providerEventId],
    );
    return rows[0];
  }
}

function describeConflict(grant: Grant, stored: EntitlementView): GrantConflict {
  const iso = (value: string | Date) => new Date(value).toISOString();
  return {
    type: grant.type,
    entitlement_id: stored.id,
    stored: { quantity: stored.quantity, period_start: iso(stored.period_start), period_end: iso(stored.period_end) },
    offered: { quantity: grant.quantity, period_start: grant.periodStart, period_end: grant.periodEnd },
  };
}
