import { randomInt } from 'node:crypto';
import pg from 'pg';
import { waitFor } from './wait.js';

export interface PausePointSpec {
  /** The table whose row change pauses the transaction. */
  table: string;
  /** Which change: the trigger fires AFTER it, so the row is written and locked but not committed. */
  on: 'INSERT' | 'UPDATE' | 'DELETE';
  /**
   * A plpgsql condition; only a matching change pauses. Default: every one. Per row it reads
   * NEW/OLD; per statement it reads the rows the statement changed as the table `changed`.
   */
  when?: string;
  /**
   * 'row' (default): after each changed row. 'statement': once after the whole statement, even
   * one that changed nothing, e.g. `when: 'NOT EXISTS (SELECT FROM changed)'` holds a guarded
   * UPDATE that found no row, before whatever its transaction does next.
   */
  level?: 'row' | 'statement';
}

/**
 * A point where one transaction of the application stops until the test lets it go, so two
 * transitions can be interleaved on purpose instead of hoping the scheduler does it.
 *
 * It is a row trigger the test owns: AFTER the chosen change it takes a transaction-scoped
 * advisory lock the test holds. The paused transaction has made its change (the row is locked,
 * not committed); its competitor runs against exactly that state; `release()` lets the first
 * one go on to its commit.
 *
 *   const pause = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', when: "NEW.status = 'sent'" });
 *   await pause.hold();
 *   const first = markSent(...);            // blocks inside its transaction
 *   await pause.waitUntilPaused();
 *   await competitor();                     // sees the uncommitted state
 *   await pause.release(); await first;
 *   await pause.remove();
 */
export interface PausePoint {
  /** Take the lock: from now on a matching change waits. */
  hold(): Promise<void>;
  /** Resolves once `count` transactions wait at this point. */
  waitUntilPaused(count?: number): Promise<void>;
  /** How many transactions wait at this point now. */
  waiting(): Promise<number>;
  /**
   * Resolves once `count` transactions of the database wait for a row lock (pg_stat_activity),
   * e.g. a competitor blocked on the row the paused transaction holds (a wait at a pause point
   * is an advisory lock, not counted).
   */
  waitForRowWaiters(count?: number): Promise<void>;
  /** Let the paused transactions go on. */
  release(): Promise<void>;
  /** Drop the trigger and close the test's connection (releases the lock if still held). */
  remove(): Promise<void>;
}

export async function pausePoint(databaseUrl: string, spec: PausePointSpec): Promise<PausePoint> {
  const key = randomInt(1, 2 ** 31 - 1);
  const name = `test_pause_${key}`;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const image = spec.on === 'DELETE' ? 'OLD' : 'NEW';
  const timing = spec.level === 'statement' ? `REFERENCING ${image} TABLE AS changed FOR EACH STATEMENT` : 'FOR EACH ROW';
  // An AFTER trigger's return value is ignored.
  await client.query(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF ${spec.when ?? 'true'} THEN PERFORM pg_advisory_xact_lock(${key}); END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER ${name} AFTER ${spec.on} ON ${spec.table} ${timing} EXECUTE FUNCTION ${name}();
  `);
  let held = false;
  const release = async () => {
    if (!held) return;
    await client.query('SELECT pg_advisory_unlock($1)', [key]);
    held = false;
  };
  const waiting = async () => {
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [key],
    );
    return rows[0].n as number;
  };
  return {
    async hold() {
      await client.query('SELECT pg_advisory_lock($1)', [key]);
      held = true;
    },
    waiting,
    async waitUntilPaused(count = 1) {
      await waitFor(waiting, (n) => n >= count, { what: `${count} transaction(s) paused on ${spec.on} ${spec.table}` });
    },
    async waitForRowWaiters(count = 1) {
      const rowWaiters = async () => {
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`,
        );
        return rows[0].n as number;
      };
      await waitFor(rowWaiters, (n) => n >= count, { what: `${count} transaction(s) waiting for a row lock behind the pause on ${spec.on} ${spec.table}` });
    },
    release,
    async remove() {
      try {
        await release();
        // On a partitioned table (calls, since migration 0055) the trigger is dropped from every
        // partition, under locks the app's statements, let go a moment ago, may take in another
        // order: PostgreSQL then aborts one side (40P01), and a drop it aborted is tried again.
        for (let attempt = 1; ; attempt++) {
          try {
            await client.query(`DROP TRIGGER IF EXISTS ${name} ON ${spec.table}; DROP FUNCTION IF EXISTS ${name}()`);
            break;
          } catch (err) {
            if ((err as { code?: string }).code !== '40P01' || attempt >= 5) throw err;
          }
        }
      } finally {
        // Closed whatever happened: a connection left open would meet the test database's DROP
        // ... WITH (FORCE) with no listener for its error, and end the whole test file.
        await client.end();
      }
    },
  };
}

/**
 * Two competitors overlapping on purpose: `first` runs until the change `spec` names (held there,
 * its row written and locked, not committed); `second` starts and is seen waiting for that row;
 * then `first` goes on to its commit and `second` decides on what it left. Their results, in
 * that order. `first`/`second` may also only set a transaction going elsewhere (a webhook a
 * worker processes): the pause and the wait are observed in the database, not in the caller.
 */
export async function overlap<A, B>(databaseUrl: string, spec: PausePointSpec, first: () => Promise<A>, second: () => Promise<B>): Promise<[A, B]> {
  const pause = await pausePoint(databaseUrl, spec);
  try {
    await pause.hold();
    const held = first();
    held.catch(() => undefined); // awaited below; not unhandled while the pause is awaited
    await pause.waitUntilPaused();
    const competing = second();
    competing.catch(() => undefined);
    await pause.waitForRowWaiters();
    await pause.release();
    return [await held, await competing];
  } finally {
    await pause.remove();
  }
}
