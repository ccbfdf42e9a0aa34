import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { MessagesService } from '../../../src/modules/messaging/messages.service.js';
import { DispatchClaims } from '../../../src/modules/messaging/dispatch-claims.js';
import { SendResolution } from '../../../src/modules/messaging/message-history-details.js';
import { SendOutcomes } from '../../../src/modules/messaging/send-outcomes.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { telnyxInboundSms } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { overlap, type PausePointSpec } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550402';
const WINDOW_SECONDS = 2;
/** The send rate the app paces by in tests (MESSAGE_SEND_RATE_DEFAULT in test/support/app.ts): the test's own claims use it too. */
const UNPACED = 1000;

/**
 * STOP wins every path that puts a message on the wire (issue #42): a retry after the carrier did
 * not take a send (503, 429), the takeover of a lease a dead worker held, and the resend after an
 * ambiguous send. Each case commits the STOP exactly while the path decides: the STOP's statement
 * is held after its writes (the number's opt_out_seq bumped, uncommitted), the path is seen
 * waiting for the number's row, then the STOP commits; the path must fail the message
 * (recipient_opted_out) and send nothing more. `verify` must see a send after a STOP on any path.
 */
describe('STOP against every send path', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  let handsetSeq = 0;
  const newHandset = () => `+1312556${String(1000 + handsetSeq++).padStart(4, '0')}`;

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx' }, { CARRIER_SEND_TIMEOUT_MS: '30000', DISPATCH_LEASE_SECONDS: '60', SEND_OUTCOME_WINDOW_SECONDS: String(WINDOW_SECONDS) });
    db = pipeline.db;
  });
  afterAll(() => pipeline.stop());

  const claims = () => pipeline.app.app.get(DispatchClaims);
  const outcomes = () => pipeline.app.app.get(SendOutcomes);
  const uow = () => pipeline.app.app.get(UnitOfWork);
  const dispatch = (id: string) => pipeline.app.app.get(DispatchMessageHandler).handle({ messageId: id }, { jobId: 'manual', attempt: 1 });
  /** A message from OUR_NUMBER to `handset` whose own job waits a day, so only the test's runs dispatch it. */
  async function accepted(handset: string, text: string): Promise<string> {
    const res = await pipeline.app.app.get(MessagesService).send(pipeline.customer.accountId, { from: OUR_NUMBER, to: handset, text, send_at: new Date(Date.now() + 86400_000).toISOString() });
    return (res.body as { data: { id: string } }).data.id;
  }
  /** A STOP from `handset`, delivered; processed by the app's worker (its transaction may be held by a pause). Its event id. */
  async function deliverStop(handset: string): Promise<string> {
    const { body } = telnyxInboundSms(OUR_NUMBER, 'STOP', { from: handset });
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    return JSON.parse(body).data.id;
  }
  const processed = (eventId: string) =>
    waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [eventId]), (n) => n === 1, { what: `carrier event ${eventId} processed` });
  /** The STOP's statement, held once it wrote the opt-out (AFTER triggers fire at its end: the number's opt_out_seq is bumped, uncommitted). */
  const stopWritten = (handset: string): PausePointSpec => ({ table: 'message_opt_outs', on: 'INSERT', when: `NEW.handset = '${handset}' AND NEW.opted_out` });
  /** The STOP committed exactly while `path` decides (it waits for the number's row the STOP holds). */
  async function stopDuring<T>(handset: string, path: () => Promise<T>): Promise<T> {
    let stop = '';
    const [, result] = await overlap(db.url, stopWritten(handset), async () => (stop = await deliverStop(handset)), path);
    await processed(stop);
    return result;
  }
  const history = (id: string) => db.pool.query(`SELECT status, detail FROM message_status_history WHERE message_id = $1 ORDER BY id`, [id]).then((r) => r.rows);
  const planted = (sql: string, id: string) => db.pool.query(sql, [id]);

  /** Failed recipient_opted_out, `message.failed` once, never billed, nothing on the handset; `verify` finds no send after the STOP. */
  async function expectRefused(id: string, attempts: number): Promise<void> {
    const [message] = (await db.pool.query(`SELECT status, error_code, claimed_until, outcome_unknown_since FROM messages WHERE id = $1`, [id])).rows;
    expect(message).toEqual({ status: 'failed', error_code: 'recipient_opted_out', claimed_until: null, outcome_unknown_since: null });
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(attempts);
    expect(pipeline.carrier.handsetFor(id)).toHaveLength(0);
    expect(await pipeline.events('message.failed', id)).toBe(1);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(0);
    await expectVerify('messaging.no_send_after_opt_out', []);
  }
  async function expectVerify(name: string, ids: string[]): Promise<void> {
    const report = await pipeline.app.app.get(VerifyService).run({ limit: 10 });
    const check = report.invariants.find((i) => i.name === name);
    expect(check).toMatchObject({ ok: ids.length === 0, count: ids.length });
    if (ids.length > 0) expect(JSON.stringify(check)).toContain(ids[0]);
  }

  it('a retry after a carrier 503 (the lease given back, retried as a reclaim): refused, not sent again', async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'retried after a 503');
    pipeline.carrier.answerNext({ status: 503 });
    await expect(dispatch(id)).rejects.toThrow(/503/);
    expect((await db.pool.query(`SELECT status, claimed_until FROM messages WHERE id = $1`, [id])).rows[0]).toEqual({ status: 'sending', claimed_until: null });

    // Between attempts: BullMQ's retry claims it while the STOP commits.
    await stopDuring(handset, () => dispatch(id));
    await expectRefused(id, 1);
    expect(await history(id)).toEqual([
      { status: 'scheduled', detail: null },
      { status: 'sending', detail: null },
      { status: 'failed', detail: null },
    ]);
  });

  it('a retry after a carrier 429 (back in the queue behind its pause): refused, not sent again', async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'retried after a 429');
    pipeline.carrier.answerNext({ status: 429, headers: { 'retry-after': '60' }, body: { errors: [{ code: '10010', title: 'Too many requests' }] } });
    await dispatch(id);
    expect((await db.pool.query(`SELECT status FROM messages WHERE id = $1`, [id])).rows[0].status).toBe('queued');
    // The pause ends (moved forward, not waited for); the test's run is the retry.
    await db.pool.query(`UPDATE phone_numbers SET send_paused_until = now() WHERE phone_number = $1`, [OUR_NUMBER]);

    await stopDuring(handset, () => dispatch(id));
    await expectRefused(id, 1);
  });

  it('a lease held by a worker that died: its takeover resolves the earlier attempt, finds nothing within the window, and refuses the resend', async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'holder died');
    const died = await uow().run((tx) => claims().claimForDispatch(tx, id, 60, UNPACED));
    expect(died.kind).toBe('claimed');
    pipeline.carrier.lookupsShow = false;
    try {
      // Its lease ends (moved forward, not waited for); the takeover counts the outcome unknown and waits for the window.
      await planted(`UPDATE messages SET claimed_until = now() - interval '1 second' WHERE id = $1`, id);
      await dispatch(id);
      expect((await db.pool.query(`SELECT outcome_unknown_since IS NOT NULL AS unknown FROM messages WHERE id = $1`, [id])).rows[0].unknown).toBe(true);
      // The window passes with nothing shown; the run at the check decides while the STOP commits.
      await planted(`UPDATE messages SET outcome_unknown_since = now() - interval '1 minute', claimed_until = now() - interval '1 second' WHERE id = $1`, id);
      await stopDuring(handset, () => dispatch(id));
    } finally {
      pipeline.carrier.lookupsShow = true;
    }
    await expectRefused(id, 0);
    expect((await history(id)).map((h) => h.detail)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), SendResolution.optedOut]);
  });

  it('an ambiguous send (504, not taken) waiting for its window: the resolver\'s resend decision, made while the STOP commits, refuses', async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'ambiguous, then STOP');
    pipeline.carrier.answerNext({ status: 504 });
    await dispatch(id);
    const [held] = (await db.pool.query(`SELECT claim_token AS token, outcome_unknown_since FROM messages WHERE id = $1`, [id])).rows;
    expect(held.outcome_unknown_since).not.toBeNull();

    // The window has passed with nothing shown (moved forward): continueResolving, the statement that would send again, decides.
    await planted(`UPDATE messages SET outcome_unknown_since = now() - interval '1 minute' WHERE id = $1`, id);
    const step = await stopDuring(handset, () =>
      uow().run((tx) => outcomes().continueResolving(tx, { id, token: held.token }, { windowSeconds: WINDOW_SECONDS, leaseSeconds: 60, lookupFailed: false })),
    );
    expect(step).toBe('refused');
    await expectRefused(id, 1);
  });

  it('verify sees a send after a STOP through the reclaim path (planted: a retry taken after the opt-out committed) and through a resend', async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'planted');
    await deliverStop(handset).then(processed);
    // What the claim wrote before the fix went in for a reclaim: nothing; what it writes for every take on the wire: a `sending` row.
    await planted(`INSERT INTO message_status_history (message_id, status, at) VALUES ($1, 'sending', now())`, id);
    try {
      await expectVerify('messaging.no_send_after_opt_out', [id]);
      await planted(`DELETE FROM message_status_history WHERE message_id = $1 AND status = 'sending'`, id);
      await db.pool.query(`INSERT INTO message_status_history (message_id, status, detail, at) VALUES ($1, 'sending', $2, now())`, [id, SendResolution.resent]);
      await expectVerify('messaging.no_send_after_opt_out', [id]);
    } finally {
      await planted(`DELETE FROM message_status_history WHERE message_id = $1 AND status = 'sending'`, id);
    }
    await expectVerify('messaging.no_send_after_opt_out', []);
  });
});
