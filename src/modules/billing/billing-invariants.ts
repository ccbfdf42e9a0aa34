import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Invariants, violations } from '../../platform/verify/invariants.js';
import type { UsageKind } from './usage-ledger.js';

/** Usage rows as other modules' invariants may read them. */
export const USAGE_ROWS_AUDIT_VIEW = `SELECT id, account_id, kind, resource_id, quantity FROM usage_records`;

/**
 * What each usage kind bills: the module recording a kind registers the rows it bills for (a
 * query whose column `id` is the resource_id it records), as it calls UsageLedger.record.
 */
@Injectable()
export class BillableResources {
  private readonly byKind = new Map<UsageKind, string>();

  register(kind: UsageKind, resourcesSql: string): void {
    if (this.byKind.has(kind)) throw new Error(`billable resources of ${kind} registered twice`);
    this.byKind.set(kind, resourcesSql);
  }

  /** (kind, id) of every billable resource; a kind nobody registered has none. */
  unionSql(): string {
    const parts = [...this.byKind].map(([kind, sql]) => `SELECT '${kind}'::text AS kind, r.id::text AS id FROM (${sql}) r`);
    return parts.length > 0 ? parts.join(' UNION ALL ') : `SELECT NULL::text AS kind, NULL::text AS id WHERE false`;
  }
}

/** Billing's promise: nothing is billed that did not happen. */
@Injectable()
export class BillingInvariants implements OnModuleInit {
  constructor(
    private readonly invariants: Invariants,
    private readonly resources: BillableResources,
  ) {}

  onModuleInit(): void {
    this.invariants.register(
      'billing.usage_has_resource',
      'every usage row bills a resource that exists of its kind (usage record ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // No resource of the row's kind carries its resource_id.
          `SELECT u.id FROM usage_records u
            WHERE NOT EXISTS (SELECT 1 FROM (${this.resources.unionSql()}) r WHERE r.kind = u.kind AND r.id = u.resource_id)`,
          [],
          limit,
        ),
    );
  }
}
