import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isUniqueViolation } from '../../platform/database/pg-errors.js';
import { exec } from '../../platform/database/tx.js';
import { ACCOUNT_COLUMNS, billingCustomerTaken, type AccountView } from './accounts.service.js';

/** One relink as the audit table keeps it. */
export interface BillingLinkAudit {
  id: string;
  account_id: string;
  previous_customer_id: string | null;
  customer_id: string | null;
  changed_by: string;
  changed_at: string;
}

/**
 * The operator's relink of an account's billing customer (contract, "Entitlements"): never the
 * account's own doing, since whoever links a customer receives the bundles its paid invoices grant.
 */
@Injectable()
export class BillingLinks {
  constructor(private readonly dataSource: DataSource) {}

  /** Links `accountId` to `customerId` (null unlinks) and writes its audit row, in one statement. */
  async link(accountId: string, customerId: string | null, changedBy: string): Promise<{ account: AccountView; audit: BillingLinkAudit }> {
    try {
      // FOR UPDATE: `previous` is the link this statement replaces, also when another relink of
      // the account commits first (it re-reads the newest row). The audit row exists only when
      // the UPDATE changed one: both come from the same RETURNING. UNIQUE(billing_customer_id)
      // decides between two accounts claiming one customer.
      const { rows } = await exec<AccountView & { previous_customer_id: string | null; audit_id: string; changed_by: string; changed_at: string }>(
        this.dataSource.manager,
        `WITH previous AS (SELECT id AS account_id, billing_customer_id AS previous_customer_id FROM accounts WHERE id = $1 FOR UPDATE),
              linked AS (
                UPDATE accounts SET billing_customer_id = $2 FROM previous p WHERE accounts.id = p.account_id
                RETURNING ${ACCOUNT_COLUMNS}, p.previous_customer_id),
              audit AS (
                INSERT INTO billing_link_audit (account_id, previous_customer_id, customer_id, changed_by)
                SELECT id, previous_customer_id, billing_customer_id, $3 FROM linked
                RETURNING id::text AS audit_id, changed_by, changed_at)
         SELECT linked.*, audit.* FROM linked, audit`,
        [accountId, customerId, changedBy],
      );
      if (rows.length === 0) throw new NotFoundException(`account ${accountId} not found`);
      const { previous_customer_id, audit_id, changed_by, changed_at, ...account } = rows[0];
      const audit = { id: audit_id, account_id: account.id, previous_customer_id, customer_id: account.billing_customer_id, changed_by, changed_at };
      return { account, audit };
    } catch (err) {
      if (isUniqueViolation(err) && customerId !== null) throw billingCustomerTaken(customerId);
      throw err;
    }
  }
}
