import { beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { StoredCarrierEvent } from '../../../src/modules/ingest/carrier-event-handlers.js';
import { ProcessCarrierEventHandler } from '../../../src/modules/ingest/process-carrier-event.handler.js';
import { ProcessCarrierEventJob } from '../../../src/modules/ingest/ingest.jobs.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { ApiClient } from '../../support/api-client.js';
import { telnyxReceipt, telnyxSigner } from '../../support/carrier-signing.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

const OUR_NUMBER = '+17735550193';
const signer = telnyxSigner();

/**
 * Delivery receipts that run together are one statement (OneStatementBatches), as inbound SMS
 * are: each receipt keeps its own readiness (one whose message is not there yet claims and writes
 * nothing, and goes down the general path to be retried, while the others apply), and two
 * receipts of one message never share a statement (one UPDATE ... FROM would apply only one).
 */
describe('delivery receipts processed in batches', () => {
  // No worker and no relay: the processing jobs stay pending for the test to run.
  const t = withTestApp({ env: { TELNYX_PUBLIC_KEY: signer.publicKey } });
  let customer: ApiClient;

  beforeAll(async () => {
    customer = await ApiClient.forNewAccount(t.app, 'receipt batches');
    await customer.assignNumber(OUR_NUMBER, 'telnyx');
    expect((await customer.post('/v2/webhook_endpoints', { url: 'http://127.0.0.1:9/hook', event_types: ['message.sent', 'message.delivered'] })).status).toBe(201);
  });

  /** An outbound message accepted (queued: no worker dispatches it); its id. */
  async function accepted(text: string): Promise<string> {
    const { status, body } = await customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550031', text });
    expect(status).toBe(202);
    return (body as { data: { id: string } }).data.id;
  }

  /** What the dispatcher's commit leaves before the carrier's answer is recorded: `sending`, under the carrier's id. */
  const dispatched = (id: string, carrierId: string) =>
    t.db.pool.query(`UPDATE messages SET status = 'sending', carrier_message_id = $2 WHERE id = $1`, [id, carrierId]);

  /** A receipt ingested; its stored event (whose id is also its job's id). */
  async function receipt(carrierId: string, status: string): Promise<StoredCarrierEvent> {
    const body = telnyxReceipt(carrierId, status);
    expect((await fetch(`${t.app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status).toBe(200);
    const { rows } = await t.db.pool.query(`SELECT id, normalized FROM carrier_events WHERE carrier_event_id = $1`, [JSON.parse(body).data.id]);
    return { id: rows[0].id, normalized: rows[0].normalized };
  }

  /** The jobs run at once, their events prefetched as after an ingest commit: one batch, in this order. */
  const runTogether = (events: StoredCarrierEvent[]) => {
    const handler = t.app.app.get(ProcessCarrierEventHandler);
    return Promise.all(events.map((e) => handler.runInOneStatement(e.id, { jobId: e.id, attempt: 1, prefetched: e })));
  };

  const message = (id: string) => t.db.pool.query(`SELECT status, xmin::text AS xmin FROM messages WHERE id = $1`, [id]).then((r) => r.rows[0]);
  const history = (id: string) => t.db.pool.query(`SELECT status FROM message_status_history WHERE message_id = $1 ORDER BY id`, [id]).then((r) => r.rows.map((row) => row.status));
  const announced = (id: string) => t.db.pool.query(`SELECT type FROM outbound_events WHERE payload->>'id' = $1 ORDER BY created_at, id`, [id]).then((r) => r.rows.map((row) => row.type));
  const event = (e: StoredCarrierEvent) =>
    t.db.pool.query(`SELECT processed_at IS NOT NULL AS processed, note, attempts FROM carrier_events WHERE id = $1`, [e.id]).then((r) => r.rows[0]);
  const jobDone = (jobId: string) => t.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NOT NULL`, [jobId]);

  it('one receipt not ready beside ready ones: those apply in one statement; it claims nothing, is retried, and applies once its message exists', async () => {
    const [a, late, c] = [await accepted('ready a'), await accepted('not ready yet'), await accepted('ready c')];
    await dispatched(a, 'rb-ready-a');
    await dispatched(c, 'rb-ready-c');
    const [ra, rLate, rc] = [await receipt('rb-ready-a', 'delivered'), await receipt('rb-late', 'delivered'), await receipt('rb-ready-c', 'delivered')];

    // undefined: the unready run wrote nothing and goes down the job runner's general path.
    expect(await runTogether([ra, rLate, rc])).toEqual(['completed', undefined, 'completed']);
    const [ma, mc] = [await message(a), await message(c)];
    expect([ma.status, mc.status]).toEqual(['delivered', 'delivered']);
    // One transaction moved both.
    expect(ma.xmin).toBe(mc.xmin);
    for (const id of [a, c]) {
      expect(await history(id)).toEqual(['queued', 'delivered']);
      expect(await announced(id)).toEqual(['message.delivered']);
    }
    expect([(await event(ra)).processed, (await event(rc)).processed]).toEqual([true, true]);
    // The unready one: its job unclaimed, its event unconsumed, its message untouched.
    expect(await jobDone(rLate.id)).toBe(0);
    expect(await event(rLate)).toEqual({ processed: false, note: null, attempts: 0 });

    // The general path: not ready, so a retry is scheduled with the reason kept on the event.
    const runner = t.app.app.get(JobRunner);
    expect(await runner.run(ProcessCarrierEventJob.name, rLate.id, 1)).toBe('completed');
    expect(await event(rLate)).toEqual({ processed: false, note: 'waiting to retry: no message carries telnyx id rb-late yet', attempts: 1 });
    expect(await t.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NULL`, [`${rLate.id}-r1`])).toBe(1);
    expect((await message(late)).status).toBe('queued');

    // The dispatcher's commit lands; the retry applies the receipt, once.
    await dispatched(late, 'rb-late');
    expect(await runner.run(ProcessCarrierEventJob.name, `${rLate.id}-r1`, 1)).toBe('completed');
    expect((await message(late)).status).toBe('delivered');
    expect(await history(late)).toEqual(['queued', 'delivered']);
    expect(await announced(late)).toEqual(['message.delivered']);
    expect(await event(rLate)).toMatchObject({ processed: true, note: null });
  });

  it('sent and delivered receipts of one message in one batch: both transitions, in order, each announced once', async () => {
    const id = await accepted('sent then delivered');
    await dispatched(id, 'rb-both');
    const [sent, delivered] = [await receipt('rb-both', 'sent'), await receipt('rb-both', 'delivered')];
    expect(await runTogether([sent, delivered])).toEqual(['completed', 'completed']);
    expect((await message(id)).status).toBe('delivered');
    expect(await history(id)).toEqual(['queued', 'sent', 'delivered']);
    expect(await announced(id)).toEqual(['message.sent', 'message.delivered']);
    expect([await event(sent), await event(delivered)]).toEqual([
      { processed: true, note: null, attempts: 1 },
      { processed: true, note: null, attempts: 1 },
    ]);
    // A receipt bills nothing (the send is billed when the carrier accepts it: markSent).
    expect(await t.db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(0);
  });

  it('a non-final word and a duplicate in the batch are consumed with their notes and move nothing', async () => {
    const id = await accepted('words that change nothing');
    await dispatched(id, 'rb-words');
    await t.db.pool.query(`UPDATE messages SET status = 'delivered' WHERE id = $1`, [id]);
    const [queued, duplicate] = [await receipt('rb-words', 'queued'), await receipt('rb-words', 'delivered')];
    expect(await runTogether([queued, duplicate])).toEqual(['completed', 'completed']);
    expect((await event(queued)).note).toBe('carrier status queued changes nothing');
    expect((await event(duplicate)).note).toBe('duplicate or superseded receipt (delivered)');
    expect(await history(id)).toEqual(['queued']);
    expect(await announced(id)).toEqual([]);
  });

  it('a batch waiting on a message another transaction moves decides from the row it locked: a failed message stays failed, the rest of the batch applies', async () => {
    const [held, free] = [await accepted('held by a competitor'), await accepted('free beside it')];
    await dispatched(held, 'rb-held');
    await dispatched(free, 'rb-free');
    const [rHeld, rFree] = [await receipt('rb-held', 'delivered'), await receipt('rb-free', 'delivered')];
    // The competitor (a failed receipt elsewhere) has moved the held message to failed, not committed:
    // the batch's snapshot still has it `sending`.
    const competitor = new pg.Client({ connectionString: t.db.url });
    await competitor.connect();
    try {
      await competitor.query('BEGIN');
      await competitor.query(`UPDATE messages SET status = 'failed', updated_at = now() WHERE id = $1`, [held]);
      const batch = runTogether([rHeld, rFree]);
      await waitFor(
        () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`),
        (n) => n === 1,
        { what: 'the batch to wait on the competitor' },
      );
      await competitor.query('COMMIT');
      expect(await batch).toEqual(['completed', 'completed']);
    } finally {
      await competitor.end();
    }
    // The first terminal word wins: the locked row said failed, so the delivered receipt moved nothing.
    expect((await message(held)).status).toBe('failed');
    expect(await history(held)).toEqual(['queued']);
    expect(await announced(held)).toEqual([]);
    expect((await event(rHeld)).note).toBe('duplicate or superseded receipt (delivered)');
    expect((await message(free)).status).toBe('delivered');
    expect(await announced(free)).toEqual(['message.delivered']);
  });
});
