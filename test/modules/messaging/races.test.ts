import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../../src/platform/config/app-config.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { DispatchClaims, type DispatchLease } from '../../../src/modules/messaging/dispatch-claims.js';
import { SendResolution } from '../../../src/modules/messaging/message-history-details.js';
import { SendOutcomes } from '../../../src/modules/messaging/send-outcomes.js';
import { referencedUrl } from '../../../src/carriers/message-sender.js';
import { MessagesService } from '../../../src/modules/messaging/messages.service.js';
import type { ApiClient } from '../../support/api-client.js';
import type { TestApp } from '../../support/app.js';
import { telnyxReceipt } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import type { FakeCarrier } from '../../support/fake-carrier.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { overlap, pausePoint, type PausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';

/** A Telnyx message id (a UUID, as SendMessage's answer documents) named for the test that scripts it: the same name, the same id. */
const carrierIds = new Map<string, string>();
function telnyxIdNamed(name: string): string {
  if (!carrierIds.has(name)) carrierIds.set(name, randomUUID());
  return carrierIds.get(name)!;
}

const OUR_NUMBER = '+17735550002';
/** A send rate (per second) for the test's own claims: back to back, never left to a later slot. */
const UNPACED = 1000;

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

  /** A signed Telnyx receipt; naming `ourMessageId` by the per-message webhook_url we send when given. Its event id. */
  async function deliverReceipt(carrierMessageId: string, status: string, ourMessageId?: string): Promise<string> {
    const receipt = JSON.parse(telnyxReceipt(carrierMessageId, status));
    if (ourMessageId) receipt.data.payload.webhook_url = referencedUrl(`${app.config.publicBaseUrl}/webhooks/telnyx`, ourMessageId);
    expect(await pipeline.deliverTelnyx(JSON.stringify(receipt))).toBe(200);
    return receipt.data.id;
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

  const dispatch = (messageId: string) => app.app.get(DispatchMessageHandler).handle({ messageId }, { jobId: 'manual', attempt: 1 });
  const usageRows = (id: string) => db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id]);

  /** An outbound message whose own job waits a day, so only the test's runs dispatch it. */
  async function scheduledMessage(text: string): Promise<string> {
    const sendAt = new Date(Date.now() + 86400_000).toISOString();
    const sent = await app.app.get(MessagesService).send(customer.accountId, { from: OUR_NUMBER, to: '+13125550022', text, send_at: sendAt });
    return (sent.body as { data: { id: string } }).data.id;
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
    /** A message whose first run calls the carrier (held open, to answer `carrierId`) past its lease's end. Its id, and that run's release and completion. */
    async function stalledPastLease(text: string, carrierId: string) {
      const id = await scheduledMessage(text);
      const stalled = carrier.holdNext({ status: 200, body: { data: { id: carrierId } } });
      const first = dispatch(id);
      await stalled.arrived;
      await db.pool.query(`UPDATE messages SET claimed_until = now() - interval '1 second' WHERE id = $1`, [id]);
      return { id, answer: async () => (stalled.release(), await first) };
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
      const { id, answer } = await stalledPastLease('lease taken over', telnyxIdNamed('of-the-stalled-run'));

      await dispatch(id);
      expect(carrier.sendsFor(id)).toHaveLength(1);
      expect(carrier.lookups.length).toBeGreaterThanOrEqual(1);
      const [message] = (await db.pool.query(`SELECT status, carrier_message_id FROM messages WHERE id = $1`, [id])).rows;
      expect(message).toEqual({ status: 'sent', carrier_message_id: telnyxIdNamed('of-the-stalled-run') });

      await answer();
      expect(await history(id)).toEqual(['scheduled', 'sending', 'sending', 'sent']);
      expect(await details(id)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'found_by_lookup']);
      expect(await usageRows(id)).toBe(1);
      expect(await events('message.sent', id)).toBe(1);
    });

    it('a late answer while the takeover resolves (the lookup cannot see the message yet): the answer is recorded, answered_late, and the takeover sends nothing', async () => {
      const { id, answer } = await stalledPastLease('late answer beats the resolver', telnyxIdNamed('answered-late'));
      carrier.lookupsShow = false;
      try {
        await dispatch(id); // takes over, finds nothing, waits for its next check
        expect(await statusOf(id)).toBe('sending');
        await answer();
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
      const died = await app.app.get(UnitOfWork).run((tx) => app.app.get(DispatchClaims).claimForDispatch(tx, id, app.config.DISPATCH_LEASE_SECONDS));
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

    describe('a receipt naming the message (our reference) against the run that holds its lease', () => {
      const claims = () => app.app.get(DispatchClaims);
      const outcomes = () => app.app.get(SendOutcomes);
      const uow = () => app.app.get(UnitOfWork);
      const WINDOW_SECONDS = 4;
      /** A message the test holds the lease of (the run that sent it), its own job a day away. */
      async function claimedByTest(text: string): Promise<DispatchLease> {
        const id = await scheduledMessage(text);
        const outcome = await uow().run((tx) => claims().claimForDispatch(tx, id, app.config.DISPATCH_LEASE_SECONDS, UNPACED));
        if (outcome.kind !== 'claimed') throw new Error(`expected a claim, got ${outcome.kind}`);
        return outcome.claim;
      }
      /**
       * As claimedByTest, its send's outcome unknown for longer than the window (a resolver that
       * finds nothing sends it again). Written directly: the check job markOutcomeUnknown leaves
       * would take the lease over mid-test.
       */
      async function unresolved(text: string): Promise<DispatchLease> {
        const lease = await claimedByTest(text);
        await db.pool.query(`UPDATE messages SET outcome_unknown_since = now() - interval '1 minute' WHERE id = $1`, [lease.id]);
        return lease;
      }
      const resolving = (lease: DispatchLease) =>
        uow().run((tx) => outcomes().continueResolving(tx, lease, { windowSeconds: WINDOW_SECONDS, leaseSeconds: app.config.DISPATCH_LEASE_SECONDS, lookupFailed: false }));
      const markUnknown = (lease: DispatchLease) => uow().run((tx) => outcomes().markOutcomeUnknown(tx, lease, 'no answer (test)', WINDOW_SECONDS));
      const on = (id: string, when: string) => ({ table: 'messages', on: 'UPDATE' as const, when: `NEW.id = '${id}' AND ${when}` });
      /** The receipt's move: the message leaves `sending`. */
      const receiptMoves = (id: string) => on(id, "OLD.status = 'sending' AND NEW.status <> 'sending'");
      const row = (id: string) => db.pool.query(`SELECT status, carrier_message_id, outcome_unknown_since FROM messages WHERE id = $1`, [id]).then((r) => r.rows[0]);
      const statusDetails = (id: string) => db.pool.query(`SELECT status, detail FROM message_status_history WHERE message_id = $1 ORDER BY id`, [id]).then((r) => r.rows);

      /** Delivered with the receipt's carrier id, billed once, announced sent and delivered once each, nothing sent by the test's runs. */
      async function expectSettledOnce(id: string, carrierId: string, receiptEventId: string): Promise<void> {
        await waitFor(() => processed(receiptEventId), Boolean, { what: 'the receipt processed', timeoutMs: 30_000 });
        expect(await row(id)).toEqual({ status: 'delivered', carrier_message_id: carrierId, outcome_unknown_since: null });
        expect(await usageRows(id)).toBe(1);
        expect(await events('message.sent', id)).toBe(1);
        expect(await events('message.delivered', id)).toBe(1);
        expect(carrier.sendsFor(id)).toHaveLength(0);
      }

      it('the receipt commits while the resolver waits for the row: settled by the receipt (found_by_receipt), the resolver finds it gone and sends nothing', async () => {
        const lease = await unresolved('receipt before the resend decision');
        const carrierId = randomUUID();
        const [receiptId, step] = await overlap(db.url, receiptMoves(lease.id), () => deliverReceipt(carrierId, 'delivered', lease.id), () => resolving(lease));
        expect(step).toBe('gone');
        await expectSettledOnce(lease.id, carrierId, receiptId);
        expect(await statusDetails(lease.id)).toEqual([
          { status: 'scheduled', detail: null }, { status: 'sending', detail: null },
          { status: 'sent', detail: 'found_by_receipt' }, { status: 'delivered', detail: null },
        ]);
      });

      it('the resolver\'s resend decision commits while the receipt waits for the row: resend recorded, the receipt still settles the message once, and the resend\'s answer records nothing', async () => {
        const lease = await unresolved('resend decision before the receipt');
        const carrierId = randomUUID();
        const resendDecided = on(lease.id, "NEW.status = 'sending' AND OLD.outcome_unknown_since IS NOT NULL AND NEW.outcome_unknown_since IS NULL");
        const [step, receiptId] = await overlap(db.url, resendDecided, () => resolving(lease), () => deliverReceipt(carrierId, 'delivered', lease.id));
        expect(step).toBe('resend');
        await expectSettledOnce(lease.id, carrierId, receiptId);
        // the resend the decision let go out: its answer (a second carrier id) is not the message's
        expect(await uow().run((tx) => outcomes().markSent(tx, lease, telnyxIdNamed('of-the-resend')))).toBe(false);
        expect(await statusDetails(lease.id)).toEqual([
          { status: 'scheduled', detail: null }, { status: 'sending', detail: null }, { status: 'sending', detail: 'resent_after_nothing_found' },
          { status: 'sent', detail: 'receipt_before_answer' }, { status: 'delivered', detail: null },
        ]);
        expect(await usageRows(lease.id)).toBe(1);
        expect(await events('message.sent', lease.id)).toBe(1);
      });

      it('the receipt commits while the failing run\'s markOutcomeUnknown waits for the row: settled (receipt_before_answer), nothing marked unknown, no check left', async () => {
        const lease = await claimedByTest('receipt before unknown');
        const carrierId = randomUUID();
        const [receiptId, marked] = await overlap(db.url, receiptMoves(lease.id), () => deliverReceipt(carrierId, 'delivered', lease.id), () => markUnknown(lease));
        expect(marked).toBe(false);
        await expectSettledOnce(lease.id, carrierId, receiptId);
        expect((await statusDetails(lease.id)).map((h: { detail: string | null }) => h.detail)).toEqual([null, null, 'receipt_before_answer', null]);
        expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1`, [`dispatch-${lease.id}-check-${lease.token}`])).toBe(0);
      });

      it('markOutcomeUnknown commits while the receipt waits for the row: the receipt settles it (found_by_receipt), the check finds nothing to do', async () => {
        const lease = await claimedByTest('unknown before receipt');
        const carrierId = randomUUID();
        const becameUnknown = on(lease.id, 'OLD.outcome_unknown_since IS NULL AND NEW.outcome_unknown_since IS NOT NULL');
        const [marked, receiptId] = await overlap(db.url, becameUnknown, () => markUnknown(lease), () => deliverReceipt(carrierId, 'delivered', lease.id));
        expect(marked).toBe(true);
        await expectSettledOnce(lease.id, carrierId, receiptId);
        expect(await statusDetails(lease.id)).toEqual([
          { status: 'scheduled', detail: null }, { status: 'sending', detail: null }, { status: 'sending', detail: 'outcome_unknown: no answer (test)' },
          { status: 'sent', detail: 'found_by_receipt' }, { status: 'delivered', detail: null },
        ]);
        // the check it left runs (its job), finds the message settled, sends and looks up nothing
        await dispatch(lease.id);
        expect(carrier.sendsFor(lease.id)).toHaveLength(0);
        expect(await usageRows(lease.id)).toBe(1);
      });
    });

    describe('a late answer against the run that took the lease over', () => {
      const takeOver = async (id: string): Promise<DispatchLease> => {
        const outcome = await app.app.get(UnitOfWork).run((tx) => app.app.get(DispatchClaims).claimForDispatch(tx, id, app.config.DISPATCH_LEASE_SECONDS, UNPACED));
        if (outcome.kind !== 'claimed') throw new Error(`expected the lease taken over, got ${outcome.kind}`);
        return outcome.claim;
      };
      const markSentByLookup = (lease: DispatchLease, carrierId: string) =>
        app.app.get(UnitOfWork).run((tx) => app.app.get(SendOutcomes).markSent(tx, lease, [carrierId], SendResolution.byLookup));
      const sentBy = (id: string, when = "NEW.status = 'sent'") => ({ table: 'messages', on: 'UPDATE' as const, when: `NEW.id = '${id}' AND ${when}` });

      it('the late answer commits while the lookup\'s markSent waits for the row: answered_late, the lookup records nothing', async () => {
        const { id, answer } = await stalledPastLease('late answer first', telnyxIdNamed('late-first'));
        const takeover = await takeOver(id);
        const [, byLookup] = await overlap(db.url, sentBy(id), answer, () => markSentByLookup(takeover, telnyxIdNamed('late-first')));
        expect(byLookup).toBe(false);
        expect(await details(id)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'answered_late']);
        expect(await usageRows(id)).toBe(1);
        expect(await events('message.sent', id)).toBe(1);
        expect(carrier.sendsFor(id)).toHaveLength(1);
      });

      it('the lookup\'s markSent commits while the late answer waits for the row: found_by_lookup, the late answer records nothing', async () => {
        const { id, answer } = await stalledPastLease('lookup first', telnyxIdNamed('lookup-first'));
        const takeover = await takeOver(id);
        const [byLookup] = await overlap(db.url, sentBy(id), () => markSentByLookup(takeover, telnyxIdNamed('lookup-first')), answer);
        expect(byLookup).toBe(true);
        expect(await details(id)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'found_by_lookup']);
        expect(await usageRows(id)).toBe(1);
        expect(await events('message.sent', id)).toBe(1);
      });

      it('the takeover\'s claim commits while the late answer waits for the row: the answer is still the carrier\'s word (answered_late), and the takeover finds nothing left to resolve', async () => {
        const { id, answer } = await stalledPastLease('claim first', telnyxIdNamed('claim-first'));
        const claimTakesOver = sentBy(id, "NEW.status = 'sending' AND NEW.outcome_unknown_since IS NOT NULL AND OLD.outcome_unknown_since IS NULL");
        const [takeover] = await overlap(db.url, claimTakesOver, () => takeOver(id), answer);
        const [message] = (await db.pool.query(`SELECT status, carrier_message_id, outcome_unknown_since FROM messages WHERE id = $1`, [id])).rows;
        expect(message).toEqual({ status: 'sent', carrier_message_id: telnyxIdNamed('claim-first'), outcome_unknown_since: null });
        expect(await details(id)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'answered_late']);
        const step = await app.app.get(UnitOfWork).run((tx) =>
          app.app.get(SendOutcomes).continueResolving(tx, takeover, { windowSeconds: 0, leaseSeconds: 60, lookupFailed: false }),
        );
        expect(step).toBe('gone');
        expect(await usageRows(id)).toBe(1);
        expect(await events('message.sent', id)).toBe(1);
      });

      it('the late answer commits while the takeover\'s claim waits for the row: sent, the lease is not taken, nothing is unknown', async () => {
        const { id, answer } = await stalledPastLease('late answer before the claim', telnyxIdNamed('before-claim'));
        const lookupsBefore = carrier.lookups.length;
        await overlap(db.url, sentBy(id), answer, () => dispatch(id));
        expect(await history(id)).toEqual(['scheduled', 'sending', 'sent']);
        expect(await details(id)).toEqual([null, null, null]);
        expect(carrier.sendsFor(id)).toHaveLength(1);
        expect(carrier.lookups).toHaveLength(lookupsBefore);
        expect(await usageRows(id)).toBe(1);
      });
    });

    it('DISPATCH_LEASE_SECONDS must outlast the carrier send timeout', () => {
      expect(() => loadConfig({ DISPATCH_LEASE_SECONDS: '10' })).toThrow(/DISPATCH_LEASE_SECONDS="10": must be longer than the carrier send timeout \(CARRIER_SEND_TIMEOUT_MS = 10000 ms\)/);
      expect(loadConfig({ DISPATCH_LEASE_SECONDS: '11' }).DISPATCH_LEASE_SECONDS).toBe(11);
      expect(loadConfig({ DISPATCH_LEASE_SECONDS: '2', CARRIER_SEND_TIMEOUT_MS: '1000' }).DISPATCH_LEASE_SECONDS).toBe(2);
    });
  });
});
