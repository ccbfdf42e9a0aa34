import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { IdempotencyKeys } from '../../../src/platform/idempotency/idempotency-keys.js';
import { Housekeeping } from '../../../src/platform/outbox/housekeeping.js';
import { ApiClient, type ApiResponse } from '../../support/api-client.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';

/** Idempotency-Key claims interleaved on purpose with their competitors. */
describe('Idempotency-Key claim races', () => {
  let db: TestDatabase;
  let app: TestApp;
  let alice: ApiClient;
  const body = { from: '+15550003331', to: '+15559990000', text: 'exactly once' };
  const send = (key: string, payload: object = body) => alice.post('/v2/messages', payload, { 'Idempotency-Key': key });
  const messagesTo = (to: string) => db.count(`SELECT count(*) FROM messages WHERE to_number = $1`, [to]);

  /** How many statements starting with `sql` wait on a lock another transaction holds (not on a pause point's). */
  const waitingOnLock = (sql: string) =>
    db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event <> 'advisory' AND query LIKE $1`, [`${sql}%`]);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url });
    alice = await ApiClient.forNewAccount(app, 'Alice');
    await alice.assignNumber(body.from, 'telnyx');
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('twins of a request held after its key insert wait for its commit: the same body replays it, another body is 422', async () => {
    const pause = await pausePoint(db.url, { table: 'idempotency_keys', on: 'INSERT', when: "NEW.key = 'twin-1'" });
    await pause.hold();
    const first = send('twin-1');
    await pause.waitUntilPaused();
    const twin = send('twin-1');
    const other = send('twin-1', { ...body, text: 'another body' });
    await waitFor(() => waitingOnLock('INSERT INTO idempotency_keys'), (n) => n === 2, { what: 'both twins to wait on the first request' });
    await pause.release();
    const [created, replayed, refused] = await Promise.all([first, twin, other]);
    await pause.remove();

    expect(created.status).toBe(202);
    expect(created.headers.get('idempotent-replayed')).toBeNull();
    expect(replayed.status).toBe(202);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(created.body);
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0].code).toBe('idempotency_key_reused');
    expect(await messagesTo(body.to)).toBe(1);
  });

  it('a key that expires and is cleaned while a twin holds it: the twin replays what it collided with, never a 500', async () => {
    const created = await send('expiring-1', { ...body, to: '+15559990001' });
    expect(created.status).toBe(202);
    // Live for a few seconds more: the twin below collides with it, then retention may take it.
    await db.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '24 hours' + interval '3 seconds' WHERE key = 'expiring-1'`);
    const pause = await pausePoint(db.url, { table: 'idempotency_keys', on: 'INSERT', level: 'statement' });
    await pause.hold();
    const twin = send('expiring-1', { ...body, to: '+15559990001' });
    await pause.waitUntilPaused(); // right after the twin's claim statement
    await waitFor(() => db.count(`SELECT count(*) FROM idempotency_keys WHERE key = 'expiring-1' AND created_at < now() - interval '24 hours'`), (n) => n === 1, {
      what: 'the key to expire',
      timeoutMs: 10000,
    });
    let retentionDone = false;
    const retention = app.app.get(Housekeeping).runAll().finally(() => (retentionDone = true));
    // Retention either deletes the key at once (nothing holds it) or waits for the twin's lock on it.
    await waitFor(async () => retentionDone || (await waitingOnLock('DELETE FROM idempotency_keys')) > 0, Boolean, { what: 'retention to run or wait' });
    await pause.release();
    const replayed: ApiResponse = await twin;
    await retention;
    await pause.remove();

    expect(replayed.status).toBe(202);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(created.body);
    expect(await messagesTo('+15559990001')).toBe(1);
    expect(await db.count(`SELECT count(*) FROM idempotency_keys WHERE key = 'expiring-1'`)).toBe(0); // cleaned after the twin
  });

  it('a response is stored only on a key this transaction claimed, never over another request\'s', async () => {
    const stored = await db.pool.query(`SELECT response_status, response_body FROM idempotency_keys WHERE key = 'twin-1'`);
    const keys = app.app.get(IdempotencyKeys);
    await expect(app.app.get(UnitOfWork).run((tx) => keys.complete(tx, alice.accountId, 'twin-1', { status: 500, body: { overwritten: true } }))).rejects.toThrow(/not claimed by this transaction/);
    expect((await db.pool.query(`SELECT response_status, response_body FROM idempotency_keys WHERE key = 'twin-1'`)).rows).toEqual(stored.rows);
  });
});
