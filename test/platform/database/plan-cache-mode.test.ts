import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { exec, type Tx } from '../../../src/platform/database/tx.js';
import { startTestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

/**
 * DATABASE_PLAN_CACHE_MODE reaches every connection of the app's pool as a startup option: the
 * hot path's prepared statements run a generic plan from their first execution (planned with
 * their values, their CTEs cost more to plan than to run: issue #43), and `auto` leaves the
 * server's own setting (behind PgBouncer, which refuses startup options it does not ignore).
 */
describe('DATABASE_PLAN_CACHE_MODE', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** plan_cache_mode on `size` of the app's pooled connections at once (each its own checkout). */
  async function modesOnPool(env: Record<string, string>, size = 3): Promise<string[]> {
    const app = await startTestApp({ databaseUrl: db.url, http: false, env });
    try {
      const dataSource = app.app.get(DataSource);
      const runners = Array.from({ length: size }, () => dataSource.createQueryRunner());
      try {
        return await Promise.all(runners.map(async (runner) => (await runner.query('SHOW plan_cache_mode'))[0].plan_cache_mode as string));
      } finally {
        await Promise.all(runners.map((runner) => runner.release()));
      }
    } finally {
      await app.close();
    }
  }

  it('is force_generic_plan on every connection by default, and a prepared statement runs a generic plan at its first execution', async () => {
    expect(await modesOnPool({})).toEqual(['force_generic_plan', 'force_generic_plan', 'force_generic_plan']);
    const app = await startTestApp({ databaseUrl: db.url, http: false });
    try {
      // The app's statements run named and prepared (exec); on the transaction's own connection,
      // the statement's one run is counted as a generic plan, not a custom one.
      const plans = await app.app.get(DataSource).transaction(async (manager) => {
        const tx = manager as Tx;
        await exec(tx, 'SELECT count(*) FROM carrier_events WHERE id = $1', ['evt_plan']);
        return (await exec<{ generic_plans: string; custom_plans: string }>(tx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = 'SELECT count(*) FROM carrier_events WHERE id = $1'`)).rows;
      });
      expect(plans.map((row) => [Number(row.generic_plans), Number(row.custom_plans)])).toEqual([[1, 0]]);
    } finally {
      await app.close();
    }
  });

  it('auto sends no option: the server keeps its own setting', async () => {
    const [server] = (await db.pool.query('SHOW plan_cache_mode')).rows.map((row) => row.plan_cache_mode as string);
    expect(await modesOnPool({ DATABASE_PLAN_CACHE_MODE: 'auto' })).toEqual([server, server, server]);
  });
});
