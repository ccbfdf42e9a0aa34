import { beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { CarrierEventProcessor } from '../../../src/modules/ingest/carrier-event-processor.js';
import { ProcessCarrierEventHandler } from '../../../src/modules/ingest/process-carrier-event.handler.js';
import type { StoredCarrierEvent } from '../../../src/modules/ingest/carrier-event-handlers.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { ProcessCarrierEventJob } from '../../../src/modules/ingest/ingest.jobs.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { ApiClient } from '../../support/api-client.js';
import { telnyxInboundSms, telnyxSigner } from '../../support/carrier-signing.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

const OUR_NUMBER = '+17735550191';
const signer = telnyxSigner();

/**
 * Inbound SMS jobs that run together are one statement (OneStatementBatches): one commit for the
 * batch, while each job keeps its claim and each event its consumption. One value Postgres refuses
 * sends only its own job down the general path, and a competitor that holds one job's row while
 * the batch runs makes the batch re-read that guard and leave that job alone.
 */
describe('inbound SMS processed in batches', () => {
  // No worker and no relay: the processing jobs stay pending for the test to run.
  const t = withTestApp({ env: { TELNYX_PUBLIC_KEY: signer.publicKey } });

  beforeAll(async () => {
    const customer = await ApiClient.forNewAccount(t.app, 'batches');
    await customer.assignNumber(OUR_NUMBER, 'telnyx');
    expect((await customer.post('/v2/webhook_endpoints', { url: 'http://127.0.0.1:9/hook', event_types: ['message.received'] })).status).toBe(201);
  });

  interface Ingested {
    jobId: string;
    stored: StoredCarrierEvent;
    carrierMessageId: string;
  }

  /** Inbound SMS ingested; each with its stored event (whose id is also its job's id). */
  async function ingest(...texts: string[]): Promise<Ingested[]> {
    const out: Ingested[] = [];
    for (const text of texts) {
      const { body, carrierMessageId } = telnyxInboundSms(OUR_NUMBER, text);
      expect((await fetch(`${t.app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).status).toBe(200);
      const { rows } = await t.db.pool.query(`SELECT id, normalized FROM carrier_events WHERE carrier_event_id = $1`, [JSON.parse(body).data.id]);
      out.push({ jobId: rows[0].id, stored: { id: rows[0].id, normalized: rows[0].normalized }, carrierMessageId });
    }
    return out;
  }

  /**
   * The jobs run at once, their events prefetched as after an ingest commit, so every run joins
   * the batch of this turn of the event loop.
   */
  const runTogether = (runs: Ingested[]) => {
    const handler = t.app.app.get(ProcessCarrierEventHandler);
    return Promise.all(runs.map((run) => handler.runInOneStatement(run.jobId, { jobId: run.jobId, attempt: 1, prefetched: run.stored })));
  };

  const message = (sms: Ingested) => t.db.pool.query(`SELECT id, xmin::text AS xmin FROM messages WHERE carrier_message_id = $1`, [sms.carrierMessageId]).then((r) => r.rows);
  const processed = (sms: Ingested) => t.db.count(`SELECT count(*) FROM carrier_events WHERE id = $1 AND processed_at IS NOT NULL`, [sms.stored.id]);
  const jobDone = (sms: Ingested) => t.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NOT NULL`, [sms.jobId]);

  /** One message with its history row, usage row, customer event, delivery and delivery job. */
  async function expectReceivedOnce(sms: Ingested): Promise<void> {
    const rows = await message(sms);
    expect(rows).toHaveLength(1);
    const id = rows[0].id;
    expect(await t.db.count(`SELECT count(*) FROM message_status_history WHERE message_id = $1`, [id])).toBe(1);
    expect(await t.db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    expect(await t.db.count(`SELECT count(*) FROM outbound_events WHERE payload->>'id' = $1`, [id])).toBe(1);
    expect(await t.db.count(`SELECT count(*) FROM webhook_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE e.payload->>'id' = $1`, [id])).toBe(1);
    expect(await t.db.count(`SELECT count(*) FROM outbox_jobs j JOIN webhook_deliveries d ON j.job_id = 'dlv-' || d.id || '-1-1' JOIN outbound_events e ON e.id = d.event_id WHERE e.payload->>'id' = $1`, [id])).toBe(1);
    expect([await processed(sms), await jobDone(sms)]).toEqual([1, 1]);
  }

  it('runs that arrive together commit in one statement; a twin run of one of them is skipped and writes nothing', async () => {
    const [a, b, c] = await ingest('batch a', 'batch b', 'batch c');
    expect(await runTogether([a, b, c, b])).toEqual(['completed', 'completed', 'completed', 'skipped']);
    for (const sms of [a, b, c]) await expectReceivedOnce(sms);
    // One transaction wrote the three messages.
    const xmins = new Set(await Promise.all([a, b, c].map(async (sms) => (await message(sms))[0].xmin)));
    expect(xmins.size).toBe(1);
  });

  it('a value Postgres refuses sends that job alone down the general path; the rest of its batch commits', async () => {
    // A test-owned trigger refuses one message's text, as a constraint would.
    await t.db.pool.query(`
      CREATE FUNCTION test_refuse_text() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.text = 'refuse me' THEN RAISE EXCEPTION 'refused' USING ERRCODE = '23514'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_refuse_text BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION test_refuse_text();`);
    try {
      const [a, refused, c] = await ingest('batch ok 1', 'refuse me', 'batch ok 2');
      // undefined: nothing written by the one-statement path, the job runner's general path is next.
      expect(await runTogether([a, refused, c])).toEqual(['completed', undefined, 'completed']);
      await expectReceivedOnce(a);
      await expectReceivedOnce(c);
      expect(await message(refused)).toHaveLength(0);
      expect([await processed(refused), await jobDone(refused)]).toEqual([0, 0]);
      // The general path runs the same handler (a batch of one) and records the failure (after a rollback).
      expect(await t.app.app.get(JobRunner).run(ProcessCarrierEventJob.name, refused.jobId, 1)).toBe('completed');
      expect(await t.db.count(`SELECT count(*) FROM carrier_events WHERE id = $1 AND processed_at IS NULL AND error LIKE '%refused%'`, [refused.stored.id])).toBe(1);
      expect(await message(refused)).toHaveLength(0);
      await t.db.pool.query(`DROP TRIGGER test_refuse_text ON messages; DROP FUNCTION test_refuse_text()`);
      // A replay, through the general path's transaction, receives it once.
      const result = await t.app.app.get(UnitOfWork).run((tx) => t.app.app.get(CarrierEventProcessor).process(tx, refused.stored.id, { replay: true }));
      expect(result.outcome).toBe('processed');
      expect(await message(refused)).toHaveLength(1);
      expect(await processed(refused)).toBe(1);
    } finally {
      await t.db.pool.query(`DROP TRIGGER IF EXISTS test_refuse_text ON messages; DROP FUNCTION IF EXISTS test_refuse_text()`);
    }
  });

  it('a competitor holding one job while the batch runs: the batch waits, re-reads that claim, leaves that job and event alone', async () => {
    const [a, b, c] = await ingest('raced a', 'raced b', 'raced c');
    // The competitor (a twin run elsewhere) has claimed b's job and consumed its event, not committed.
    const competitor = new pg.Client({ connectionString: t.db.url });
    await competitor.connect();
    try {
      await competitor.query('BEGIN');
      await competitor.query(`UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1 WHERE job_id = $1`, [b.jobId]);
      await competitor.query(`UPDATE carrier_events SET processed_at = now(), note = 'the competitor' WHERE id = $1`, [b.stored.id]);
      const batch = runTogether([a, b, c]);
      await waitFor(
        () => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`),
        (n) => n === 1,
        { what: 'the batch to wait on the competitor' },
      );
      await competitor.query('COMMIT');
      expect(await batch).toEqual(['completed', 'skipped', 'completed']);
    } finally {
      await competitor.end();
    }
    await expectReceivedOnce(a);
    await expectReceivedOnce(c);
    // b: the competitor's outcome stands; the batch wrote nothing for it.
    expect(await message(b)).toHaveLength(0);
    expect(await t.db.count(`SELECT count(*) FROM carrier_events WHERE id = $1 AND note = 'the competitor'`, [b.stored.id])).toBe(1);
    expect(await t.db.count(`SELECT attempts FROM outbox_jobs WHERE job_id = $1`, [b.jobId])).toBe(1);
  });
});
