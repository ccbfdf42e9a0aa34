import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../../src/platform/config/app-config.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { MessageTransitions } from '../../../src/modules/messaging/message-transitions.js';
import { MessagesService } from '../../../src/modules/messaging/messages.service.js';
import type { ApiClient } from '../../support/api-client.js';
import type { TestApp } from '../../support/app.js';
import { telnyxReceipt } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import type { FakeCarrier } from '../../support/fake-carrier.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { pausePoint, type PausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550002';

/**
 * Each guard of a message's life interleaved with its competitor on purpose: one transaction is
 * held at a chosen point (pausePoint, or a send request the fake carrier keeps open) while the
 * other runs against exactly that state.
 */
describe('message transitions raced against each other', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  let app: TestApp;
  let carrier: FakeCarrier;
  let customer: ApiClient;

  async function deliverReceipt(carrierMessageId: string, status: string): Promise<string> {
    const body = telnyxReceipt(carrierMessageId, status);
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    return JSON.parse(body).data.id;
  }

  const processed = (carrierEventId: string): Promise<{ note: string | null } | undefined> =>
    db.pool.query(`SELECT note FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [carrierEventId]).then((r) => r.rows[0]);
  const events = (type: string, messageId: string) => pipeline.events(type, messageId);
  const history = (messageId: string) =>
    db.pool.query(`SELECT status FROM message_status_history WHERE message_id = $1 ORDER BY id`, [messageId]).then((r) => r.rows.map((h) => h.status));
  const details = (messageId: string) =>
    db.pool.query(`SELECT detail FROM message_status_history WHERE message_id = $1 ORDER BY id`, [messageId]).then((r) => r.rows.map((h) => h.detail));
  const statusOf = (messageId: string) => db.pool.query(`SELECT status FROM messages WHERE id = $1`, [messageId]).then((r) => r.rows[0]?.status);
  /** Transactions of the app waiting for a row another transaction holds (not for a test's pause). */
  const blockedOnRows = () =>
    db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`);

  async function withPauses<T>(pauses: PausePoint[], body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } finally {
      for (const pause of pauses) await pause.remove();
    }
  }

  beforeAll(async () => {
    // The in-flight sends the tests hold stay within the send timeout; nothing the carrier does not show is resent sooner than 4 s.
    pipeline = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx' }, { CARRIER_SEND_TIMEOUT_MS: '30000', DISPATCH_LEASE_SECONDS: '60', SEND_OUTCOME_WINDOW_SECONDS: '4' });
    ({ db, app, carrier, customer } = pipeline);
  });
  afterAll(() => pipeline.stop());

  it('a delivered receipt processed while markSent has not committed: delivered, one message.delivered', async () => {
    // markSent held after its UPDATE; the receipt's guard held after it found nothing to change,
    // so markSent commits between the receipt's guard and whatever its transaction does next.
    const sendUncommitted = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', when: "NEW.status = 'sent'" });
    const guardFoundNothing = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', level: 'statement', when: 'NOT EXISTS (SELECT FROM changed)' });
    await withPauses([sendUncommitted, guardFoundNothing], async () => {
      await sendUncommitted.hold();
      await guardFoundNothing.hold();
      const carrierId = randomUUID();
      carrier.answerNext({ status: 200, body: { data: { id: carrierId } } });
      const { body } = await customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550021', text: 'receipt beside an open send' });
      const id = body.data.id;
      await sendUncommitted.waitUntilPaused();

      const receiptId = await deliverReceipt(carrierId, 'delivered');
      await guardFoundNothing.waitUntilPaused();
      await sendUncommitted.release();
      await waitFor(() => statusOf(id), (s) => s === 'sent', { what: 'markSent to commit' });
      await guardFoundNothing.release();

      const receipt = await waitFor(() => processed(receiptId), Boolean, { what: 'the receipt processed', timeoutMs: 30000 });
      expect(await statusOf(id)).toBe('delivered');
      // its first run found no committed stamp, so it changed nothing (not even the event) and a
      // later run applied it: never called a duplicate by a read in a newer snapshot
      expect(receipt?.note).toBeNull();
      expect(await history(id)).toEqual(['queued', 'sending', 'sent', 'delivered']);
      expect(await events('message.sent', id)).toBe(1);
      expect(await events('message.delivered', id)).toBe(1);
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    });
  }, 60000);

  it('two copies of one delivered receipt processed at once: one transition, one message.delivered', async () => {
    const { id, carrierId } = await pipeline.sendAndWaitSent(OUR_NUMBER, '+13125550020', 'duplicate receipts');
    const firstApplied = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', when: "NEW.status = 'delivered'" });
    await withPauses([firstApplied], async () => {
      await firstApplied.hold();
      const first = await deliverReceipt(carrierId, 'delivered');
      await firstApplied.waitUntilPaused();
      const second = await deliverReceipt(carrierId, 'delivered');
      await waitFor(blockedOnRows, (n) => n >= 1, { what: 'the second receipt to wait on the message row' });
      await firstApplied.release();

      const notes = await Promise.all([first, second].map((e) => waitFor(() => processed(e), Boolean, { what: `receipt ${e} processed` })));
      expect(notes.map((n) => n?.note ?? 'applied').sort()).toEqual(['applied', 'duplicate or superseded receipt (delivered)']);
      expect(await statusOf(id)).toBe('delivered');
      expect(await history(id)).toEqual(['queued', 'sending', 'sent', 'delivered']);
      expect(await events('message.delivered', id)).toBe(1);
    });
  }, 60000);

  describe('two dispatch runs of one message', () => {
    const dispatch = (messageId: string) => app.app.get(DispatchMessageHandler).handle({ messageId }, { jobId: 'manual', attempt: 1 });
    const usageRows = (id: string) => db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id]);

    /** An outbound message whose own job waits a day, so only the test's runs dispatch it. */
    async function scheduledMessage(text: string): Promise<string> {
      const sendAt = new Date(Date.now() + 86400_000).toISOString();
      const sent = await app.app.get(MessagesService).send(customer.accountId, { from: OUR_NUMBER, to: '+13125550022', text, send_at: sendAt });
      return (sent.body as { data: { id: string } }).data.id;
    }

    it('a second run while the first is still calling the carrier: one carrier call, one sent, one usage row', async () => {
      const id = await scheduledMessage('stalled job and its twin');
      const inFlight = carrier.holdNext();
      const first = dispatch(id);
      await inFlight.arrived;

      await dispatch(id);
      expect(carrier.sendsFor(id)).toHaveLength(1);
      // it left a run for when the first run's lease ends, in case that run died
      const [lease] = (await db.pool.query(`SELECT claimed_until FROM messages WHERE id = $1`, [id])).rows;
      const [check] = (await db.pool.query(`SELECT run_at FROM outbox_jobs WHERE name = 'dispatch-message' AND data->>'messageId' = $1 AND job_id <> $2`, [id, `dispatch-${id}`])).rows;
      expect(check.run_at.getTime()).toBe(lease.claimed_until.getTime());

      inFlight.release();
      await first;
      expect(carrier.sendsFor(id)).toHaveLength(1);
      expect(await statusOf(id)).toBe('sent');
      expect(await history(id)).toEqual(['scheduled', 'sending', 'sent']);
      expect(await usageRows(id)).toBe(1);
      expect(await events('message.sent', id)).toBe(1);
    });

    it('a run past its lease is taken over: the takeover resolves it from the carrier\'s lookup and sends nothing; the late answer records nothing new', async () => {
      const id = await scheduledMessage('lease taken over');
      const stalled = carrier.holdNext({ status: 200, body: { data: { id: 'carrier-id-of-the-stalled-run' } } });
      const first = dispatch(id);
      await stalled.arrived;
      // the first run stalls past its lease
      await db.pool.query(`UPDATE messages SET claimed_until = now() - interval '1 second' WHERE id = $1`, [id]);

      await dispatch(id);
      expect(carrier.sendsFor(id)).toHaveLength(1);
      expect(carrier.lookups.length).toBeGreaterThanOrEqual(1);
      const [message] = (await db.pool.query(`SELECT status, carrier_message_id FROM messages WHERE id = $1`, [id])).rows;
      expect(message).toEqual({ status: 'sent', carrier_message_id: 'carrier-id-of-the-stalled-run' });

      stalled.release();
      await first;
      expect(await history(id)).toEqual(['scheduled', 'sending', 'sending', 'sent']);
      expect(await details(id)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'found_by_lookup']);
      expect(await usageRows(id)).toBe(1);
      expect(await events('message.sent', id)).toBe(1);
    });

    it('a late answer while the takeover resolves (the lookup cannot see the message yet): the answer is recorded, answered_late, and the takeover sends nothing', async () => {
      const id = await scheduledMessage('late answer beats the resolver');
      const stalled = carrier.holdNext({ status: 200, body: { data: { id: 'carrier-id-answered-late' } } });
      const first = dispatch(id);
      await stalled.arrived;
      await db.pool.query(`UPDATE messages SET claimed_until = now() - interval '1 second' WHERE id = $1`, [id]);
      carrier.lookupsShow = false;
      try {
        await dispatch(id); // takes over, finds nothing, waits for its next check
        expect(await statusOf(id)).toBe('sending');
        stalled.release();
        await first;
        expect(await statusOf(id)).toBe('sent');
        // the takeover's check finds it settled, and sends nothing
        await dispatch(id);
      } finally {
        carrier.lookupsShow = true;
      }
      expect(carrier.sendsFor(id)).toHaveLength(1);
      expect(await details(id)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'answered_late']);
      expect(await usageRows(id)).toBe(1);
      expect(await events('message.sent', id)).toBe(1);
    });

    it('a run that died holding the lease (before its send left): its twin leaves a run for the lease\'s end, which finds nothing at the carrier within the window and then sends it, once', async () => {
      const id = await scheduledMessage('holder died');
      const died = await app.app.get(UnitOfWork).run((tx) => app.app.get(MessageTransitions).claimForDispatch(tx, id, app.config.DISPATCH_LEASE_SECONDS));
      if (died.kind !== 'claimed') throw new Error(`expected a claim, got ${died.kind}`);

      await dispatch(id);
      expect(carrier.sendsFor(id)).toHaveLength(0);
      // the lease's end comes (moved forward, not waited for)
      await db.pool.query(`UPDATE messages SET claimed_until = now() - interval '1 second' WHERE id = $1`, [id]);
      const moved = await db.pool.query(`UPDATE outbox_jobs SET run_at = now() - interval '1 second' WHERE job_id = $1`, [`dispatch-${id}-${died.claim.token}`]);
      expect(moved.rowCount).toBe(1);

      await waitFor(() => statusOf(id), (s) => s === 'sent', { what: 'the run at the lease\'s end to resolve, then send it', timeoutMs: 30_000 });
      expect(carrier.sendsFor(id)).toHaveLength(1);
      expect(await history(id)).toEqual(['scheduled', 'sending', 'sending', 'sending', 'sent']);
      expect(await details(id)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'resent_after_nothing_found', null]);
      expect(await usageRows(id)).toBe(1);
      expect(await events('message.sent', id)).toBe(1);
    });

    it('DISPATCH_LEASE_SECONDS must outlast the carrier send timeout', () => {
      expect(() => loadConfig({ DISPATCH_LEASE_SECONDS: '10' })).toThrow(/DISPATCH_LEASE_SECONDS="10": must be longer than the carrier send timeout \(CARRIER_SEND_TIMEOUT_MS = 10000 ms\)/);
      expect(loadConfig({ DISPATCH_LEASE_SECONDS: '11' }).DISPATCH_LEASE_SECONDS).toBe(11);
      expect(loadConfig({ DISPATCH_LEASE_SECONDS: '2', CARRIER_SEND_TIMEOUT_MS: '1000' }).DISPATCH_LEASE_SECONDS).toBe(2);
    });
  });
});
