import type { TestDatabase } from './database.js';
import { waitFor } from './wait.js';

/**
 * Dispatch runs queued in order behind a sending number's row: the test holds the row (FOR
 * UPDATE), starts each run once the one before waits for it (each holding its own message's row
 * meanwhile), then lets them all go: they take the number's row in that order. Resolves when all
 * have finished.
 */
export async function dispatchQueuedBehindNumberRow(db: TestDatabase, phoneNumber: string, runs: (() => Promise<void>)[]): Promise<void> {
  const lockWaiters = (n: number) =>
    waitFor(
      () => db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`),
      (c) => c >= n,
      { what: `${n} claims waiting for the number's row` },
    );
  const holder = await db.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(`SELECT FROM phone_numbers WHERE phone_number = $1 FOR UPDATE`, [phoneNumber]);
    const running: Promise<void>[] = [];
    for (const run of runs) {
      running.push(run());
      await lockWaiters(running.length);
    }
    await holder.query('COMMIT');
    await Promise.all(running);
  } finally {
    holder.release();
  }
}
