import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { exec } from '../database/tx.js';

declare const snapshotBrand: unique symbol;

/**
 * A READ ONLY, REPEATABLE READ transaction: every check of one verify pass reads the same
 * snapshot, and none can write (the writers of every module take a Tx, which this is not).
 */
export type Snapshot = EntityManager & { readonly [snapshotBrand]: true };

/** How many rows break an invariant, and the ids of the first `limit` of them. */
export interface Violations {
  count: number;
  examples: string[];
}

export type InvariantCheck = (snapshot: Snapshot, limit: number) => Promise<Violations>;

export interface Invariant {
  /** `<module>.<what holds>`, e.g. `messaging.receipt_implies_terminal`. */
  name: string;
  /** What holds, in a sentence a support engineer reads. */
  description: string;
  check: InvariantCheck;
}

const INVARIANT_NAME = /^[a-z]+\.[a-z_]+$/;

/**
 * What exactly-once means here, as checks over committed rows. Each module registers the checks
 * over its own tables from its own file (`<module>-invariants.ts`); `verify` and /metrics run them all.
 */
@Injectable()
export class Invariants {
  private readonly registered = new Map<string, Invariant>();

  register(name: string, description: string, check: InvariantCheck): void {
    if (!INVARIANT_NAME.test(name)) throw new Error(`invariant name ${JSON.stringify(name)} is not <module>.<snake_case>`);
    if (this.registered.has(name)) throw new Error(`invariant ${name} registered twice`);
    this.registered.set(name, { name, description, check });
  }

  all(): Invariant[] {
    return [...this.registered.values()].sort((a, b) => a.name.localeCompare(b.name));
  }
}

/**
 * The usual check: `sql` selects one row per violation with its id in column `id`; this counts
 * them and keeps the first `limit` ids (in id order: ours are time-ordered, so oldest first).
 * `limit` becomes the last parameter.
 */
export async function violations(snapshot: Snapshot, sql: string, params: unknown[], limit: number): Promise<Violations> {
  const { rows } = await exec<{ count: string; examples: string[] }>(
    snapshot,
    `WITH broken AS (${sql})
     SELECT (SELECT count(*) FROM broken) AS count,
            ARRAY(SELECT id::text FROM broken ORDER BY id LIMIT $${params.length + 1}) AS examples`,
    [...params, limit],
  );
  return { count: Number(rows[0].count), examples: rows[0].examples };
}
