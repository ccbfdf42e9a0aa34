import { Injectable } from '@nestjs/common';
import type { UsageKind } from './usage.dto.js';

/** What Entitlements tells Billing about its bundles (PrepaidBundles.register). */
export interface BundleSource {
  /** Every grant: entitlement_id, account_id, entitlement_type, quantity, invoice_id, granted_at. */
  grantsSql: string;
  /** The usage kinds that draw each entitlement type down. */
  drawnBy: Record<string, readonly UsageKind[]>;
}

const NO_GRANTS = `SELECT NULL::text AS entitlement_id, NULL::text AS account_id, NULL::text AS entitlement_type, NULL::bigint AS quantity, NULL::text AS invoice_id, NULL::timestamptz AS granted_at WHERE false`;

/**
 * Which bundle each usage row drew down, computed on every read from the grants and the ledger,
 * never stored: the rule /v2/balances counts by (usage of a type from its first grant on draws
 * it down; beyond what was granted is overage), made per row. The units of a type are numbered in
 * ledger order (created_at, id) and the bundles' units in grant order: a row's units come from
 * the bundles whose numbers they share. So a bundle granted after an overage covers it, as
 * /v2/balances says. Not written with the usage row on purpose: concurrent usage rows would each
 * see the same remaining units unless every usage statement locked the account's bundles.
 * Entitlements registers its grants here (Billing cannot import it: it imports Billing).
 */
@Injectable()
export class PrepaidBundles {
  private source?: BundleSource;

  register(source: BundleSource): void {
    if (this.source) throw new Error('prepaid bundles registered twice');
    this.source = source;
  }

  /** The account's grants (`account`: SQL text, a parameter), each with g_end: its last unit's number among its type's. */
  grantsSql(account: string): string {
    return `SELECT g.*, sum(g.quantity) OVER (PARTITION BY g.entitlement_type ORDER BY g.granted_at, g.entitlement_id) AS g_end
              FROM (${this.source?.grantsSql ?? NO_GRANTS}) g WHERE g.account_id = ${account}`;
  }

  /**
   * The account's usage rows that draw a bundle down: usage_record_id, quantity, created_at,
   * entitlement_type, u_end (the row's last unit's number), granted (units of that type granted
   * by the row's time: the balance as it was then).
   */
  drawingRowsSql(account: string): string {
    const pairs = Object.entries(this.source?.drawnBy ?? {}).flatMap(([type, kinds]) => kinds.map((kind) => `('${type}', '${kind}')`));
    if (pairs.length === 0) return `SELECT NULL::text AS usage_record_id, NULL::bigint AS quantity, NULL::timestamptz AS created_at, NULL::text AS entitlement_type, NULL::bigint AS u_end, NULL::bigint AS granted WHERE false`;
    const grants = this.grantsSql(account);
    return `SELECT u.id AS usage_record_id, u.quantity, u.created_at, bk.entitlement_type,
                   sum(u.quantity) OVER (PARTITION BY bk.entitlement_type ORDER BY u.created_at, u.id) AS u_end,
                   (SELECT sum(g.quantity) FROM (${grants}) g WHERE g.entitlement_type = bk.entitlement_type AND g.granted_at <= u.created_at) AS granted
              FROM usage_records u JOIN (VALUES ${pairs.join(', ')}) bk (entitlement_type, kind) ON bk.kind = u.kind
              JOIN (SELECT entitlement_type, min(granted_at) AS since FROM (${grants}) g GROUP BY entitlement_type) f ON f.entitlement_type = bk.entitlement_type
             WHERE u.account_id = ${account} AND u.created_at >= f.since`;
  }

  /** Per usage row and bundle: usage_record_id, entitlement_id, entitlement_type, quantity (the units shared). */
  drawDownsSql(account: string): string {
    return `SELECT d.usage_record_id, g.entitlement_id, g.entitlement_type,
                   (least(d.u_end, g.g_end) - greatest(d.u_end - d.quantity, g.g_end - g.quantity))::bigint AS quantity
              FROM (${this.drawingRowsSql(account)}) d
              JOIN (${this.grantsSql(account)}) g ON g.entitlement_type = d.entitlement_type AND g.g_end - g.quantity < d.u_end AND d.u_end - d.quantity < g.g_end`;
  }
}

/** The draw-downs of usage row `u` (alias) as a jsonb array, from CTE `drawDowns` (drawDownsSql). */
export function drawDownsJson(drawDowns: string, usageAlias: string): string {
  return `coalesce((SELECT jsonb_agg(jsonb_build_object('entitlement_id', d.entitlement_id, 'entitlement_type', d.entitlement_type, 'quantity', d.quantity) ORDER BY d.entitlement_id)
                      FROM ${drawDowns} d WHERE d.usage_record_id = ${usageAlias}.id), '[]'::jsonb)`;
}
