import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { MessagesService } from '../../../src/modules/messaging/messages.service.js';
import { DispatchClaims } from '../../../src/modules/messaging/dispatch-claims.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { HELP_KEYWORDS, OPT_IN_KEYWORDS, OPT_OUT_KEYWORDS } from '../../../src/modules/messaging/opt-out-keywords.js';
import { telnyxEvent, telnyxInboundSms } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550002';
const OTHER_NUMBER = '+17735550003';

/** STOP and its kin on inbound SMS: the consent row, its events and reply once each, and sends refused after it. */
describe('opt-out keywords', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  let handsetSeq = 0;
  const newHandset = () => `+1312555${String(1000 + handsetSeq++).padStart(4, '0')}`;

  /** An inbound SMS from `from` to `to`, delivered and processed (its carrier event consumed). */
  async function inbound(from: string, text: string, to = OUR_NUMBER, carrierMessageId?: string): Promise<string> {
    const { body, carrierMessageId: id } = telnyxInboundSms(to, text, { from, carrierMessageId });
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    await processed(JSON.parse(body).data.id);
    return id;
  }
  const processed = (eventId: string) =>
    waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [eventId]), (n) => n === 1, { what: `carrier event ${eventId} processed` });
  const consent = (handset: string, ourNumber = OUR_NUMBER) =>
    db.pool.query(`SELECT opted_out FROM message_opt_outs WHERE handset = $1 AND our_number = $2`, [handset, ourNumber]).then((r) => r.rows[0]?.opted_out as boolean | undefined);
  const optEvents = (type: string, handset: string) => db.count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND payload->>'handset' = $2`, [type, handset]);
  const replies = (handset: string, kind: string) => db.count(`SELECT count(*) FROM messages WHERE to_number = $1 AND auto_reply = $2`, [handset, kind]);
  const send = (from: string, to: string, text = 'hello') => pipeline.customer.post('/v2/messages', { from, to, text });

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx', [OTHER_NUMBER]: 'telnyx' });
    db = pipeline.db;
  });
  afterAll(() => pipeline.stop());

  it('each opt-out keyword, trimmed and in any case, opts the handset out of that number; each opt-in keyword back in', async () => {
    for (const [k, word] of OPT_OUT_KEYWORDS.entries()) {
      const handset = newHandset();
      const text = k % 2 === 0 ? ` ${word.toLowerCase()}\n` : word;
      await inbound(handset, text);
      expect({ word, optedOut: await consent(handset), events: await optEvents('message.opted_out', handset), replies: await replies(handset, 'opt_out') })
        .toEqual({ word, optedOut: true, events: 1, replies: 1 });
      const optIn = OPT_IN_KEYWORDS[k % OPT_IN_KEYWORDS.length];
      await inbound(handset, optIn.toLowerCase());
      expect({ optIn, optedOut: await consent(handset), events: await optEvents('message.opted_in', handset), replies: await replies(handset, 'opt_in') })
        .toEqual({ optIn, optedOut: false, events: 1, replies: 1 });
    }
  });

  it('HELP and INFO get the help text and change nothing; a keyword inside a sentence is just a message', async () => {
    const handset = newHandset();
    for (const word of HELP_KEYWORDS) await inbound(handset, ` ${word.toLowerCase()} `);
    await inbound(handset, 'please stop');
    await inbound(handset, 'START now');
    expect(await replies(handset, 'help')).toBe(2);
    expect(await consent(handset)).toBeUndefined();
    expect(await db.count(`SELECT count(*) FROM messages WHERE to_number = $1 AND auto_reply IS NOT NULL AND auto_reply <> 'help'`, [handset])).toBe(0);
    const [help] = (await db.pool.query(`SELECT text, from_number FROM messages WHERE to_number = $1 AND auto_reply = 'help' LIMIT 1`, [handset])).rows;
    expect(help).toEqual({ text: expect.stringContaining('STOP'), from_number: OUR_NUMBER });
  });

  it('a STOP delivered twice, re-signed under a new event id, and sent again by the handset: one opt-out, one event, one reply, billed once', async () => {
    const handset = newHandset();
    const { body, carrierMessageId } = telnyxInboundSms(OUR_NUMBER, 'STOP', { from: handset });
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    const resigned = telnyxEvent('message.received', JSON.parse(body).data.payload);
    expect(await pipeline.deliverTelnyx(resigned)).toBe(200);
    await processed(JSON.parse(body).data.id);
    await processed(JSON.parse(resigned).data.id);
    await inbound(handset, 'Stop');
    expect(await db.count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [carrierMessageId])).toBe(1);
    expect(await consent(handset)).toBe(true);
    expect(await optEvents('message.opted_out', handset)).toBe(1);
    expect(await replies(handset, 'opt_out')).toBe(1);
    // the confirmation goes out (to the opted-out handset, on purpose) and is billed once
    const [reply] = (await db.pool.query(`SELECT id FROM messages WHERE to_number = $1 AND auto_reply = 'opt_out'`, [handset])).rows;
    await waitFor(() => db.pool.query(`SELECT status FROM messages WHERE id = $1`, [reply.id]).then((r) => r.rows[0].status), (s) => s === 'sent', { what: 'the confirmation to be sent' });
    expect(pipeline.carrier.sendsFor(reply.id)).toHaveLength(1);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [reply.id])).toBe(1);
  });

  it('POST /v2/messages to an opted-out handset answers 422 recipient_opted_out; the other number (scope number) still sends; START lifts it', async () => {
    const handset = newHandset();
    await inbound(handset, 'STOP');
    const refused = await send(OUR_NUMBER, handset);
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0]).toMatchObject({ code: 'recipient_opted_out', source: { pointer: '/to' } });
    expect(await db.count(`SELECT count(*) FROM messages WHERE to_number = $1 AND auto_reply IS NULL`, [handset])).toBe(0);
    expect((await send(OTHER_NUMBER, handset)).status).toBe(202);
    await inbound(handset, 'START');
    expect((await send(OUR_NUMBER, handset)).status).toBe(202);
  });

  it('an account whose scope is account: a STOP to one number refuses sends from all of them', async () => {
    await db.pool.query(`UPDATE accounts SET opt_out_scope = 'account', keyword_replies = $2 WHERE id = $1`, [
      pipeline.customer.accountId,
      JSON.stringify({ opt_out: { text: 'Bye from Acme', segments: 1, encoding: 'GSM-7' } }),
    ]);
    try {
      const handset = newHandset();
      await inbound(handset, 'quit', OTHER_NUMBER);
      expect(await consent(handset, '*')).toBe(true);
      expect((await send(OUR_NUMBER, handset)).status).toBe(422);
      expect((await send(OTHER_NUMBER, handset)).status).toBe(422);
      const [reply] = (await db.pool.query(`SELECT text, from_number FROM messages WHERE to_number = $1 AND auto_reply = 'opt_out'`, [handset])).rows;
      expect(reply).toEqual({ text: 'Bye from Acme', from_number: OTHER_NUMBER });
      const [event] = (await db.pool.query(`SELECT payload FROM outbound_events WHERE type = 'message.opted_out' AND payload->>'handset' = $1`, [handset])).rows;
      expect(event.payload).toMatchObject({ record_type: 'opt_out', scope: 'account', number: null, opted_out: true });
    } finally {
      await db.pool.query(`UPDATE accounts SET opt_out_scope = 'number', keyword_replies = '{}' WHERE id = $1`, [pipeline.customer.accountId]);
    }
  });

  /** A message from OUR_NUMBER to `handset`, accepted (its own job waits a day, so only the test's runs dispatch it). */
  async function accepted(handset: string, text: string): Promise<string> {
    const res = await pipeline.app.app.get(MessagesService).send(pipeline.customer.accountId, { from: OUR_NUMBER, to: handset, text, send_at: new Date(Date.now() + 86400_000).toISOString() });
    return (res.body as { data: { id: string } }).data.id;
  }
  const dispatch = (id: string) => pipeline.app.app.get(DispatchMessageHandler).handle({ messageId: id }, { jobId: 'manual', attempt: 1 });
  /** Until `n` statements whose text contains `marker` wait for a lock (pg_stat_activity, polled to a deadline). */
  const lockWaits = (marker: string, what: string, n = 1) =>
    waitFor(
      () => db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, [marker]),
      (waiting) => waiting >= n,
      { what },
    );
  /** Runs `race` while a transaction the test owns holds the locks `lockSql` takes (`race` commits it). */
  async function holding(lockSql: string, params: unknown[], race: (holder: pg.Client) => Promise<void>): Promise<void> {
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(lockSql, params);
      await race(holder);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
  }
  /** The dispatch guard's refusal: failed recipient_opted_out, `message.failed` once, never billed, never sent. */
  async function expectRefusedAtDispatch(id: string): Promise<void> {
    const [message] = (await db.pool.query(`SELECT status, error_code FROM messages WHERE id = $1`, [id])).rows;
    expect(message).toEqual({ status: 'failed', error_code: 'recipient_opted_out' });
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(0);
    expect(await pipeline.events('message.failed', id)).toBe(1);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(0);
    const history = (await db.pool.query(`SELECT status FROM message_status_history WHERE message_id = $1 ORDER BY id`, [id])).rows.map((h) => h.status);
    expect(history).toEqual(['scheduled', 'failed']);
    await expectNoSendAfterOptOut();
  }
  /** `verify`'s invariant over everything this suite did: no message taken for sending after its recipient's opt-out committed. */
  async function expectNoSendAfterOptOut(): Promise<void> {
    const report = await pipeline.app.app.get(VerifyService).run({ limit: 10 });
    expect(report.invariants.find((i) => i.name === 'messaging.no_send_after_opt_out')).toMatchObject({ ok: true, count: 0 });
  }
  /**
   * While the test holds `lockSql`, dispatches `id` until `dispatchWaits`, then commits a STOP from
   * `handset` (the whole inbound path), then lets the dispatch go: the guard must refuse it.
   */
  async function stopWhileDispatchWaits(
    handset: string,
    id: string,
    lockSql: string,
    params: unknown[],
    dispatchWaits: () => Promise<unknown>,
    runDispatch: (id: string) => Promise<unknown> = dispatch,
  ): Promise<void> {
    await holding(lockSql, params, async (holder) => {
      const run = runDispatch(id);
      await dispatchWaits();
      await inbound(handset, 'STOP');
      expect(await consent(handset)).toBe(true);
      await holder.query('COMMIT');
      await run;
    });
    await expectRefusedAtDispatch(id);
  }
  /** A STOP from `handset`, delivered (its processing may wait); the event id to wait for. */
  async function deliverStop(handset: string): Promise<string> {
    const { body } = telnyxInboundSms(OUR_NUMBER, 'STOP', { from: handset });
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    return JSON.parse(body).data.id;
  }
  const NUMBER_ROW = `SELECT FROM phone_numbers WHERE phone_number = $1 AND status IN ('ordering', 'active', 'releasing')`;
  /** The dispatch claim statement, by its first CTE (pg_stat_activity keeps a statement's first 1 kB only). */
  const CLAIM = 'WITH locked AS (SELECT m.id AS locked_id';
  /** The inbound SMS statement that records the STOP, by its first CTE. */
  const KEYWORD = 'WITH evt_input AS (';

  it('a STOP that commits while an accepted message waits for its dispatch: the dispatch guard fails it (recipient_opted_out, message.failed, not billed, never sent)', async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'accepted before STOP');
    // The test holds the message's row: the dispatch run starts and waits for it, as a run does
    // behind a twin, then the STOP commits.
    await stopWhileDispatchWaits(handset, id, `SELECT FROM messages WHERE id = $1 FOR UPDATE`, [id], () =>
      waitFor(
        () => db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`),
        (n) => n >= 1,
        { what: 'the dispatch run to wait for the message row' },
      ),
    );
  });

  it("a STOP that commits while the dispatch claim waits for the sending number's row: the claim sees the number's opt_out_seq move, runs again, and fails the message", async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'accepted before STOP, claim waiting for the number');
    // The test's transaction holds the number's row against the claim's FOR UPDATE but not against
    // the STOP's bump of opt_out_seq (a no-key update: FOR KEY SHARE conflicts only with the
    // first), so the STOP commits exactly while the claim waits, after the claim's snapshot was
    // taken. (A real competitor, another claim, holds the row FOR UPDATE: the STOP then queues
    // for the row too; the next two tests take that in both orders.)
    await stopWhileDispatchWaits(handset, id, `${NUMBER_ROW} FOR KEY SHARE`, [OUR_NUMBER], () => lockWaits(CLAIM, "the dispatch claim to wait for the number's row"));
  });

  it("the same through the transactional claim (claimNow's fallback): its statement, told the number's opt-outs changed, runs again in its transaction and refuses", async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'accepted before STOP, transactional claim waiting for the number');
    const outcomes: unknown[] = [];
    const claimInTransaction = async (messageId: string) =>
      outcomes.push(await pipeline.app.app.get(UnitOfWork).run((tx) => pipeline.app.app.get(DispatchClaims).claimForDispatch(tx, messageId, 60)));
    await stopWhileDispatchWaits(handset, id, `${NUMBER_ROW} FOR KEY SHARE`, [OUR_NUMBER], () => lockWaits(CLAIM, "the transactional claim to wait for the number's row"), claimInTransaction);
    expect(outcomes).toEqual([{ kind: 'done' }]);
  });

  it("another claim holds the number's row, a STOP queued for it first, then the dispatch claim: the STOP commits first, the claim sees it and fails the message", async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'accepted before STOP, STOP first in the queue');
    await holding(`${NUMBER_ROW} FOR UPDATE`, [OUR_NUMBER], async (holder) => {
      const stop = await deliverStop(handset);
      await lockWaits(KEYWORD, "the STOP's statement to wait for the number's row");
      const run = dispatch(id);
      await lockWaits(CLAIM, "the dispatch claim to wait for the number's row behind the STOP");
      await holder.query('COMMIT');
      await processed(stop);
      await run;
    });
    expect(await consent(handset)).toBe(true);
    await expectRefusedAtDispatch(id);
  });

  it("another claim holds the number's row, the dispatch claim queued for it first, then a STOP: the message is sent, and the STOP commits only after that claim", async () => {
    const handset = newHandset();
    const id = await accepted(handset, 'accepted before STOP, claim first in the queue');
    await holding(`${NUMBER_ROW} FOR UPDATE`, [OUR_NUMBER], async (holder) => {
      const run = dispatch(id);
      await lockWaits(CLAIM, "the dispatch claim to wait for the number's row");
      const stop = await deliverStop(handset);
      await lockWaits(KEYWORD, "the STOP's statement to wait for the number's row behind the claim");
      // the STOP has not committed: it waits behind the claim
      expect(await consent(handset)).toBeUndefined();
      await holder.query('COMMIT');
      await run;
      await processed(stop);
    });
    expect(await consent(handset)).toBe(true);
    // claimed before the STOP committed: sent once, billed once; never taken for sending after it
    expect((await db.pool.query(`SELECT status FROM messages WHERE id = $1`, [id])).rows[0].status).toBe('sent');
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(1);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    await expectNoSendAfterOptOut();
  });
});
