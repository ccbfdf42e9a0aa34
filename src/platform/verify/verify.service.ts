import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Invariants, type Snapshot } from './invariants.js';

export interface InvariantReport {
  name: string;
  description: string;
  ok: boolean;
  count: number;
  examples: string[];
}

export interface VerifyReport {
  ok: boolean;
  /** How many invariants are broken (not how many rows break them). */
  broken: number;
  /** The snapshot every check read (the transaction's start). */
  checked_at: string;
  invariants: InvariantReport[];
}

export interface VerifyOptions {
  /** Example ids kept per invariant. */
  limit: number;
  /** Each statement of the pass is cancelled after this long (a scrape must not hang on it). */
  statementTimeoutMs?: number;
}

/** One read-only pass over every registered invariant, all in one snapshot. */
@Injectable()
export class VerifyService {
  constructor(
    private readonly invariants: Invariants,
    private readonly dataSource: DataSource,
  ) {}

  run({ limit, statementTimeoutMs }: VerifyOptions): Promise<VerifyReport> {
    // REPEATABLE READ: one snapshot for every check, so two checks never disagree because a
    // transition committed between them. READ ONLY: Postgres refuses any write a check might try.
    return this.dataSource.transaction('REPEATABLE READ', async (manager) => {
      await manager.query('SET TRANSACTION READ ONLY');
      if (statementTimeoutMs !== undefined) await manager.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(statementTimeoutMs))}`);
      const [{ at }] = await manager.query(`SELECT now() AS at`);
      const invariants: InvariantReport[] = [];
      for (const invariant of this.invariants.all()) {
        let found;
        try {
          found = await invariant.check(manager as Snapshot, limit);
        } catch (err) {
          throw new Error(`invariant ${invariant.name} could not be checked: ${(err as Error).message}`);
        }
        invariants.push({ name: invariant.name, description: invariant.description, ok: found.count === 0, ...found });
      }
      const broken = invariants.filter((i) => !i.ok).length;
      return { ok: broken === 0, broken, checked_at: new Date(at).toISOString(), invariants };
    });
  }
}
