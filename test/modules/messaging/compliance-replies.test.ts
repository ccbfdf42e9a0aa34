import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { DEFAULT_KEYWORD_REPLIES } from '../../../src/modules/messaging/opt-out-keywords.js';
import { SEND_CLAIM_MAX_AGE_MS, SEND_LATENESS_TOLERANCE_SECONDS } from '../../../src/modules/messaging/sender-pacing.js';
import { telnyxInboundSms } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import type { HandsetSms } from '../../support/fake-carrier.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { dispatchQueuedBehindNumberRow } from '../../support/number-row-race.js';
import { waitFor } from '../../support/wait.js';

const STOP_NUMBER = '+17735550601';
const HELP_NUMBER = '+17735550602';
const RACE_NUMBER = '+17735550603';
const FOLLOW_NUMBER = '+17735550604';
/** The numbers' rate: a long code's 1 message a second (no burst allowance at 1/s: SEND_BURST_SECONDS is half a second). */
const RATE = 1;
const SPACING_MS = 1000 / RATE;
/**
 * Two sends may be claimed up to SEND_LATENESS_TOLERANCE_SECONDS closer than their spacing (a send
 * claimed just late counts at its slot), and arrive closer still by what separates a claim from
 * its request (at most SEND_CLAIM_MAX_AGE_MS, or the claim is given back): the fake carrier's
 * clock reads them after HTTP and an event loop the app shares with the test and other files.
 * The times the number's rate counted them at (each sent message's send_slot) are exact.
 */
const CLOCK_TOLERANCE_MS = SEND_LATENESS_TOLERANCE_SECONDS * 1000 + SEND_CLAIM_MAX_AGE_MS;
const BACKLOG = 30;
/**
 * How far a slot may move on its own over the backlog: a send claimed later after its slot than
 * SEND_LATENESS_TOLERANCE_SECONDS pushes the room for the next back by the excess (and counts
 * there: its send_slot), and the slots after it wait for that room at their places. A loaded
 * machine's jobs run late: full runs beside other work (load 10-13 on 2 cores) drifted 1.0-1.2 s
 * over the 30 messages. Still under the 4 s or more that the STOP's refused slots give back.
 */
const DRIFT_MS = 2000;

/**
 * Compliance replies ahead of the backlog (issue #42): with 30 customer messages queued on a
 * number at 1/s, a STOP's confirmation (and a HELP's reply) reaches the carrier within a slot or
 * two of the keyword, not after the backlog; the messages the STOP refused give their slots back
 * (later ones, to other handsets, move up); and the reply still counts toward the number's rate:
 * no two sends from the number arrive at the carrier closer than the rate allows.
 */
describe('compliance replies ahead of a backlog', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [STOP_NUMBER]: 'telnyx', [HELP_NUMBER]: 'telnyx', [RACE_NUMBER]: 'telnyx', [FOLLOW_NUMBER]: 'telnyx' });
    db = pipeline.db;
    await pipeline.paceEveryNumberAt(RATE);
  });
  afterAll(() => pipeline.stop());

  /** 30 messages from `from`, posted at once; every third to `keywordHandset`, the others to handsets of their own. */
  async function backlog(from: string, keywordHandset: string, otherPrefix: string): Promise<{ id: string; to: string }[]> {
    const posted = [];
    for (let i = 0; i < BACKLOG; i++) {
      const to = i % 3 === 1 ? keywordHandset : `${otherPrefix}${String(i).padStart(2, '0')}`;
      const res = await pipeline.customer.post('/v2/messages', { from, to, text: `campaign ${i}` });
      expect(res.status).toBe(202);
      posted.push({ id: res.body.data.id as string, to });
    }
    return posted;
  }
  const arrivalsFrom = (from: string): HandsetSms[] => pipeline.carrier.handset.filter((s) => s.from === from).sort((a, b) => a.at.getTime() - b.at.getTime());
  /** Each message's send slot (ms), once every one has been given one (by its first dispatch run). */
  const slotsOf = async (ids: string[]): Promise<Map<string, number>> => {
    const { rows } = await waitFor(
      () => db.pool.query(`SELECT id, send_slot FROM messages WHERE id = ANY($1)`, [ids]),
      (r) => r.rows.every((row) => row.send_slot !== null),
      { what: 'every message of the backlog given its slot' },
    );
    return new Map(rows.map((row) => [row.id as string, (row.send_slot as Date).getTime()]));
  };
  /**
   * The keyword from `handset` to `to`, delivered once `afterSends` of the backlog (`ids`) reached
   * the carrier: the backlog's slots just before it, and when its statement recorded it (database clock).
   */
  async function keywordMidBacklog(to: string, handset: string, word: string, afterSends: number, ids: string[]): Promise<{ at: number; slotsBefore: Map<string, number> }> {
    await waitFor(() => Promise.resolve(arrivalsFrom(to).length), (n) => n >= afterSends, { what: `${afterSends} of the backlog sent`, timeoutMs: 30_000 });
    const slotsBefore = await slotsOf(ids);
    expect(await pipeline.deliverTelnyx(telnyxInboundSms(to, word, { from: handset }).body)).toBe(200);
    const recorded = await waitFor(
      () => db.pool.query(`SELECT created_at FROM messages WHERE direction = 'inbound' AND from_number = $1 AND to_number = $2`, [handset, to]).then((r) => r.rows[0]?.created_at as Date | undefined),
      (at) => at !== undefined,
      { what: `the ${word} recorded` },
    );
    return { at: recorded!.getTime(), slotsBefore };
  }
  /** The smallest gap between the times the number's rate counted two sends from `from` at (their send slots), in ms. */
  const countedGap = async (from: string) =>
    Number(
      (await db.pool.query(
        `SELECT min(extract(epoch FROM gap) * 1000) AS ms FROM (
           SELECT send_slot - lag(send_slot) OVER (ORDER BY send_slot) AS gap FROM messages WHERE from_number = $1 AND direction = 'outbound' AND status IN ('sent', 'delivered')) s`,
        [from],
      )).rows[0].ms,
    );
  /** Every gap between two sends from `from`, as the carrier saw them arrive. */
  const arrivalGaps = (from: string) => {
    const times = arrivalsFrom(from).map((s) => s.at.getTime());
    return times.slice(1).map((t, i) => t - times[i]);
  };
  /** The keyword's reply (`text`) reaches the carrier within two slots of the keyword's statement (`keywordAt`). */
  const expectReplyWithinTwoSlots = async (handset: string, text: string, keywordAt: number) => {
    const reply = await waitFor(
      () => Promise.resolve(pipeline.carrier.handset.find((s) => s.to === handset && s.text === text)),
      (sms) => sms !== undefined,
      { what: `the reply to ${handset} at the carrier`, timeoutMs: 30_000 },
    );
    expect(reply!.at.getTime() - keywordAt).toBeLessThanOrEqual(2 * SPACING_MS + CLOCK_TOLERANCE_MS);
  };
  const allSettled = (ids: string[]) =>
    waitFor(() => db.count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND status IN ('sent', 'failed')`, [ids]), (n) => n === ids.length, { what: 'the backlog drained', timeoutMs: 90_000 });

  it('STOP: its confirmation reaches the carrier within two slots, the refused messages give their slots back, and nothing from the number arrives faster than 1/s', async () => {
    const handset = '+13125560601';
    const posted = await backlog(STOP_NUMBER, handset, '+131255607');
    const { at: stoppedAt, slotsBefore } = await keywordMidBacklog(STOP_NUMBER, handset, 'STOP', 3, posted.map((p) => p.id));

    // Within two slots of the STOP (the backlog still had ~25 s to go).
    await expectReplyWithinTwoSlots(handset, DEFAULT_KEYWORD_REPLIES.opt_out, stoppedAt);
    await allSettled(posted.map((p) => p.id));

    const rows = new Map(
      (await db.pool.query(`SELECT id, status, error_code, send_slot FROM messages WHERE id = ANY($1)`, [posted.map((p) => p.id)])).rows.map((r) => [r.id as string, r]),
    );
    const refused = posted.filter((p) => rows.get(p.id).status === 'failed');
    // The STOP's messages still waiting were refused (every one to the handset not yet sent), nothing else failed.
    expect(refused.length).toBeGreaterThanOrEqual(5);
    for (const p of refused) expect([p.to, rows.get(p.id).error_code]).toEqual([handset, 'recipient_opted_out']);
    expect(pipeline.carrier.handset.filter((s) => s.to === handset && s.at.getTime() > stoppedAt && s.text !== DEFAULT_KEYWORD_REPLIES.opt_out)).toEqual([]);

    // Slots given back: the last message went out earlier than the slot it held before the STOP,
    // by the refused slots ahead of it less the confirmation's one (kept, it would go a slot later).
    // (Less a little: a slot whose sends before it were claimed late waits for the room, at its place.)
    const last = posted.at(-1)!;
    const movedUpMs = slotsBefore.get(last.id)! - rows.get(last.id).send_slot.getTime();
    expect(movedUpMs).toBeGreaterThanOrEqual((refused.length - 1) * SPACING_MS - DRIFT_MS);
    // The sends, the confirmation among them, drain at the rate: as many slots as sends, no more.
    const sends = arrivalsFrom(STOP_NUMBER);
    expect(sends).toHaveLength(BACKLOG - refused.length + 1);
    const span = sends.at(-1)!.at.getTime() - sends[0].at.getTime();
    expect(span).toBeLessThanOrEqual((sends.length - 1) * SPACING_MS * 1.05 + SPACING_MS);
    // The confirmation counts toward the rate: no two sends closer than the number's spacing.
    expect(Math.min(...arrivalGaps(STOP_NUMBER))).toBeGreaterThanOrEqual(SPACING_MS - CLOCK_TOLERANCE_MS);
    expect(await countedGap(STOP_NUMBER)).toBeGreaterThanOrEqual(SPACING_MS);
  });

  it('HELP: its reply reaches the carrier within two slots, ahead of the backlog (which moves a slot later), and nothing from the number arrives faster than 1/s', async () => {
    const handset = '+13125560602';
    const posted = await backlog(HELP_NUMBER, handset, '+131255608');
    const { at: askedAt, slotsBefore } = await keywordMidBacklog(HELP_NUMBER, handset, 'HELP', 3, posted.map((p) => p.id));

    await expectReplyWithinTwoSlots(handset, DEFAULT_KEYWORD_REPLIES.help, askedAt);
    await allSettled(posted.map((p) => p.id));

    // HELP refuses nothing: every message sent, the handset's too, and the reply took one slot more.
    expect(await db.count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND status = 'sent'`, [posted.map((p) => p.id)])).toBe(BACKLOG);
    const sends = arrivalsFrom(HELP_NUMBER);
    expect(sends).toHaveLength(BACKLOG + 1);
    // The backlog after it moved one slot later (its last message too), no more.
    const last = posted.at(-1)!;
    const [lastSlot] = (await db.pool.query(`SELECT send_slot FROM messages WHERE id = $1`, [last.id])).rows;
    const movedMs = lastSlot.send_slot.getTime() - slotsBefore.get(last.id)!;
    expect(movedMs).toBeGreaterThanOrEqual(SPACING_MS);
    expect(movedMs).toBeLessThanOrEqual(SPACING_MS + DRIFT_MS);
    expect(Math.min(...arrivalGaps(HELP_NUMBER))).toBeGreaterThanOrEqual(SPACING_MS - CLOCK_TOLERANCE_MS);
    expect(await countedGap(HELP_NUMBER)).toBeGreaterThanOrEqual(SPACING_MS);
  });

  it("a refused message's slot given back around a competing claim in flight (SKIP LOCKED): the message whose claim holds its row keeps its slot, the one behind moves up, and nothing goes out faster than 1/s", async () => {
    const handset = '+13125560603';
    const dayAhead = new Date(Date.now() + 86_400_000).toISOString();
    const post = async (to: string, text: string) => (await pipeline.customer.post('/v2/messages', { from: RACE_NUMBER, to, text, send_at: dayAhead })).body.data.id as string;
    const [refused, inFlight, behind] = [await post(handset, 'refused'), await post('+13125560604', 'in flight'), await post('+13125560605', 'behind')];
    // Planted: consecutive slots, the first two due, the third half a second ahead, the number's next free one after them
    // (their own jobs wait a day: only the runs below and the jobs they write dispatch them); the first one's handset opted out.
    for (const [id, offset] of [[refused, -1.5], [inFlight, -0.5], [behind, 0.5]] as const) {
      await db.pool.query(`UPDATE messages SET send_slot = now() + make_interval(secs => $2::float8) WHERE id = $1`, [id, offset]);
    }
    await db.pool.query(`UPDATE phone_numbers SET next_send_at = now() + interval '1.5 seconds', sends_paced_until = NULL WHERE phone_number = $1`, [RACE_NUMBER]);
    await db.pool.query(
      `INSERT INTO message_opt_outs (account_id, our_number, handset, opted_out, changed_by, source) VALUES ($1, $2, $3, true, 'msg_planted_stop', 'keyword')`,
      [pipeline.customer.accountId, RACE_NUMBER, handset],
    );
    const slotsBefore = await slotsOf([inFlight, behind]);

    // The refused message's run waits for the number's row (the test holds it), then the competing
    // claim, which holds its own message's row while it waits behind it: the refusal's statement
    // gets the number's row first and moves the waiting messages up around the one locked.
    const dispatch = (id: string) => () => pipeline.app.app.get(DispatchMessageHandler).handle({ messageId: id }, { jobId: 'manual', attempt: 1 });
    await dispatchQueuedBehindNumberRow(db, RACE_NUMBER, [dispatch(refused), dispatch(inFlight)]);

    const row = async (id: string) => (await db.pool.query(`SELECT status, error_code, send_slot FROM messages WHERE id = $1`, [id])).rows[0];
    expect(await row(refused)).toMatchObject({ status: 'failed', error_code: 'recipient_opted_out' });
    // The competing claim kept the slot it held (never moved up: no job at another slot of its own), and
    // sent: its send counted no sooner than that slot.
    expect(await row(inFlight)).toMatchObject({ status: 'sent' });
    expect((await row(inFlight)).send_slot.getTime()).toBeGreaterThanOrEqual(slotsBefore.get(inFlight)!);
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE 'dispatch-%-at-%' AND data->>'messageId' = $1`, [inFlight])).toBe(0);
    // The one behind went out through the job the refusal wrote, never inside the number's spacing after the competing send.
    await waitFor(() => row(behind), (r) => r.status === 'sent', { what: 'the message behind sent', timeoutMs: 30_000 });
    expect((await row(behind)).send_slot.getTime() - slotsBefore.get(inFlight)!).toBeGreaterThanOrEqual(SPACING_MS);
    const arrivals = arrivalsFrom(RACE_NUMBER);
    expect(arrivals.map((s) => s.ourMessageId)).toEqual([inFlight, behind]);
    expect(Math.min(...arrivalGaps(RACE_NUMBER))).toBeGreaterThanOrEqual(SPACING_MS - CLOCK_TOLERANCE_MS);
    expect(await countedGap(RACE_NUMBER)).toBeGreaterThanOrEqual(SPACING_MS);
    // Its slot moved up by one spacing when the refused one gave its own back (its job then): consistent with the number's slots.
    const jobs = await db.pool.query(`SELECT run_at FROM outbox_jobs WHERE job_id LIKE 'dispatch-' || $1 || '-at-%' ORDER BY run_at`, [behind]);
    expect(jobs.rows[0].run_at.getTime()).toBe(slotsBefore.get(behind)! - SPACING_MS);
  });

  it("a reply's follow-up jobs stay in the replies' queue: a second run finding its lease held, the carrier's 429, and a send whose answer was lost each write a dispatch-reply job in messaging-replies", async () => {
    const handset = '+13125560606';
    // The reply's first send is held open at the carrier (its run holds the lease), then answered 429; its resend's answer is lost (a gateway 504).
    const held = pipeline.carrier.holdNext({ status: 429, headers: { 'retry-after': '1' }, body: { errors: [{ code: '10010', title: 'Too many requests' }] } });
    expect(await pipeline.deliverTelnyx(telnyxInboundSms(FOLLOW_NUMBER, 'HELP', { from: handset }).body)).toBe(200);
    await held.arrived;
    const [reply] = (await db.pool.query(`SELECT id, claim_token FROM messages WHERE to_number = $1 AND auto_reply IS NOT NULL`, [handset])).rows;
    const jobsOf = async (suffix: string) =>
      (await db.pool.query(`SELECT queue, name FROM outbox_jobs WHERE job_id LIKE 'dispatch-' || $1 || $2`, [reply.id, suffix])).rows;

    // A second run (a twin of its job) finds the lease held: a run at the lease's end, in the replies' queue.
    await pipeline.app.app.get(DispatchMessageHandler).handle({ messageId: reply.id }, { jobId: 'twin', attempt: 1 });
    expect(await jobsOf(`-${reply.claim_token}`)).toEqual([{ queue: 'messaging-replies', name: 'dispatch-reply' }]);

    pipeline.carrier.loseAnswers('504');
    held.release();
    await waitFor(() => pipeline.customer.get(`/v2/messages/${reply.id}`), (r) => r.body.data.status === 'sent', { what: 'the reply sent', timeoutMs: 30_000 });
    expect(await jobsOf('-retry-%')).toEqual([{ queue: 'messaging-replies', name: 'dispatch-reply' }]);
    expect(await jobsOf('-check-%')).toEqual([{ queue: 'messaging-replies', name: 'dispatch-reply' }]);
    // Every dispatch job the reply ever had went to the replies' queue; it reached the handset once.
    const all = await db.pool.query(`SELECT DISTINCT queue, name FROM outbox_jobs WHERE data->>'messageId' = $1`, [reply.id]);
    expect(all.rows).toEqual([{ queue: 'messaging-replies', name: 'dispatch-reply' }]);
    expect(pipeline.carrier.handset.filter((s) => s.to === handset)).toHaveLength(1);
  });
});
