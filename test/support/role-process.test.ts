import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestDatabase, type TestDatabase } from './database.js';
import { TEST_REDIS_URL } from './env.js';
import { freePort } from './ports.js';
import { RoleProcess } from './processes.js';

/**
 * RoleProcess.waitStarted, which startCluster waits on for every role: the chaos test that stops
 * PostgreSQL stalled when a relay and both workers were still booting at the stop and exited
 * ("onceline failed to start"), leaving 150 stored events nobody processed.
 */
describe('RoleProcess.waitStarted', () => {
  let db: TestDatabase;
  const env = async (databaseUrl: string) => ({ DATABASE_URL: databaseUrl, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: `rp${await freePort()}`, LOG_LEVEL: 'warn' });
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('rejects with the output of a role that exits before it started (its database refuses connections)', async () => {
    const worker = new RoleProcess('worker', await env(`postgres://postgres@127.0.0.1:${await freePort()}/nowhere`)).start();
    try {
      await expect(worker.waitStarted()).rejects.toThrow(/worker exited \(code 1\) before it started:[\s\S]*onceline failed to start/);
      expect(worker.started).toBe(false);
    } finally {
      await worker.kill();
    }
  });

  it('resolves once the role logged that it started, and again only for the new child after a restart', async () => {
    const worker = new RoleProcess('worker', await env(db.url)).start();
    try {
      await worker.waitStarted();
      expect(worker.started).toBe(true);
      await worker.kill();
      worker.start();
      expect(worker.started).toBe(false);
      await worker.waitStarted();
      expect(worker.started).toBe(true);
    } finally {
      await worker.kill();
    }
  });
});
