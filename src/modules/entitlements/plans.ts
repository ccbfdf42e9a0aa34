import { ConflictException, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { isEntitlementType, type EntitlementType, ENTITLEMENT_TYPES } from './entitlement-types.js';

/** A price's lookup key as plans hold it: printable, no spaces (Stripe allows at most 200 characters). */
export const LOOKUP_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** Most units one plan grants per unit bought: times a line's quantity it stays a safe integer. */
export const MAX_PLAN_QUANTITY = 1_000_000_000;

export interface Plan {
  type: EntitlementType;
  quantity: number;
}

export interface PlanView {
  lookup_key: string;
  type: EntitlementType;
  quantity: number;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `lookup_key, type, quantity::text AS quantity, created_at, updated_at`;

/** Which price grants what: lookup_key → entitlement type and quantity per unit bought. */
@Injectable()
export class Plans {
  constructor(private readonly dataSource: DataSource) {}

  /** Creates a plan or changes its quantity; its type is fixed at creation. */
  async upsert(lookupKey: string, type: string, quantity: number): Promise<PlanView> {
    if (!LOOKUP_KEY_PATTERN.test(lookupKey)) throw new Error('--lookup-key must be 1 to 255 printable characters without spaces');
    if (!isEntitlementType(type)) throw new Error(`--type must be one of ${ENTITLEMENT_TYPES.join(', ')}`);
    if (!Number.isInteger(quantity) || quantity < 1 || quantity > MAX_PLAN_QUANTITY) throw new Error(`--quantity must be a whole number from 1 to ${MAX_PLAN_QUANTITY}`);
    // The conflicting row is locked and returned whatever happens; the CASE is the guard: a plan
    // of another type keeps its quantity too, and the returned type tells the caller so.
    const { rows } = await exec<Omit<PlanView, 'quantity'> & { quantity: string }>(
      this.dataSource.manager,
      `INSERT INTO plans AS p (lookup_key, type, quantity) VALUES ($1, $2, $3)
       ON CONFLICT (lookup_key) DO UPDATE
         SET quantity = CASE WHEN p.type = EXCLUDED.type THEN EXCLUDED.quantity ELSE p.quantity END,
             updated_at = CASE WHEN p.type = EXCLUDED.type THEN now() ELSE p.updated_at END
       RETURNING ${COLUMNS}`,
      [lookupKey, type, quantity],
    );
    const plan = { ...rows[0], quantity: Number(rows[0].quantity) };
    if (plan.type !== type) {
      throw new ConflictException({
        code: 'plan_type_fixed',
        title: 'A plan keeps its type',
        detail: `plan ${lookupKey} grants ${plan.type}; a plan's type never changes (an invoice granted under it would grant again as another type): use a new lookup key`,
      });
    }
    return plan;
  }

  /** Every plan, by lookup key. */
  async list(): Promise<PlanView[]> {
    // No WHERE: plans are few (one per price), an operator's list.
    const rows: (Omit<PlanView, 'quantity'> & { quantity: string })[] = await queryRows(this.dataSource.manager, `SELECT ${COLUMNS} FROM plans ORDER BY lookup_key`);
    return rows.map((row) => ({ ...row, quantity: Number(row.quantity) }));
  }

  /** The plans of these lookup keys, read in the granting transaction. */
  async forLookupKeys(tx: Tx, lookupKeys: string[]): Promise<Map<string, Plan>> {
    const rows = await queryRows<{ lookup_key: string; type: EntitlementType; quantity: string }>(tx, 
      `SELECT lookup_key, type, quantity::text AS quantity FROM plans WHERE lookup_key = ANY($1::text[])`,
      [lookupKeys],
    );
    return new Map(rows.map((r) => [r.lookup_key, { type: r.type, quantity: Number(r.quantity) }]));
  }
}
