import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { SEND_CLAIM_MAX_AGE_MS, SEND_LATENESS_TOLERANCE_SECONDS } from '../../../src/modules/messaging/sender-pacing.js';
import type { TestDatabase } from '../../support/database.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { dispatchQueuedBehindNumberRow } from '../../support/number-row-race.js';
import { waitFor } from '../../support/wait.js';

const YIELD_NUMBER = '+17735550611';
const STALE_NUMBER = '+17735550612';
/** A long code's 1 message a second: no burst allowance, so the room is exactly the rate's next send. */
const RATE = 1;
const SPACING_MS = 1000 / RATE;
/** As in compliance-replies.test.ts: claims up to the lateness tolerance closer, arrivals a little closer still. */
const CLOCK_TOLERANCE_MS = SEND_LATENESS_TOLERANCE_SECONDS * 1000 + SEND_CLAIM_MAX_AGE_MS;

/**
 * The number's queue keeps its order without moving anyone (issue #42): a message whose slot falls
 * due while the message just ahead of it (queued before it) still waits near that slot yields to
 * it, at its own place, and never loses a slot doing so, even when the one ahead was claimed while
 * its own claim waited for the number's row (its snapshot still shows that one waiting).
 */
describe("a number's queue order", () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [YIELD_NUMBER]: 'telnyx', [STALE_NUMBER]: 'telnyx' });
    db = pipeline.db;
    await pipeline.paceEveryNumberAt(RATE);
  });
  afterAll(() => pipeline.stop());

  const dispatch = (id: string) => pipeline.app.app.get(DispatchMessageHandler).handle({ messageId: id }, { jobId: 'manual', attempt: 1 });
  const row = async (id: string) => (await db.pool.query(`SELECT status, send_slot FROM messages WHERE id = $1`, [id])).rows[0];
  /**
   * Two messages from `from`, `ahead` posted first (the smaller id), with slots 0.3 s and 0.2 s
   * past (the one ahead moved onto the other's slot, as a compliance reply's room leaves it), the
   * number's next free slot after them and room now. Their own jobs wait a day: only the runs
   * below and the jobs they write dispatch them.
   */
  async function plantTwo(from: string): Promise<{ ahead: string; behind: string }> {
    const dayAhead = new Date(Date.now() + 86_400_000).toISOString();
    const post = async (to: string) => (await pipeline.customer.post('/v2/messages', { from, to, text: 'queued', send_at: dayAhead })).body.data.id as string;
    const [ahead, behind] = [await post('+13125560611'), await post('+13125560612')];
    for (const [id, offset] of [[ahead, -0.3], [behind, -0.2]] as const) {
      await db.pool.query(`UPDATE messages SET send_slot = now() + make_interval(secs => $2::float8) WHERE id = $1`, [id, offset]);
    }
    await db.pool.query(`UPDATE phone_numbers SET next_send_at = now() + interval '1.5 seconds', sends_paced_until = NULL WHERE phone_number = $1`, [from]);
    return { ahead, behind };
  }
  const arrivals = (from: string) => pipeline.carrier.handset.filter((s) => s.from === from).sort((a, b) => a.at.getTime() - b.at.getTime());
  /** Both sent, the one ahead first, no closer than the number's spacing. */
  async function expectInOrderAtTheRate(from: string, ahead: string, behind: string): Promise<void> {
    await waitFor(() => row(behind), (r) => r.status === 'sent', { what: 'the message behind sent', timeoutMs: 30_000 });
    const sent = arrivals(from);
    expect(sent.map((s) => s.ourMessageId)).toEqual([ahead, behind]);
    expect(sent[1].at.getTime() - sent[0].at.getTime()).toBeGreaterThanOrEqual(SPACING_MS - CLOCK_TOLERANCE_MS);
  }

  it('a due message yields to the one ahead of it still waiting: one spacing at its place (no new place at the end, a job then), and the one ahead goes first', async () => {
    const { ahead, behind } = await plantTwo(YIELD_NUMBER);
    const before = (await db.pool.query(`SELECT send_slot FROM messages WHERE id = $1`, [behind])).rows[0].send_slot as Date;
    const nextFree = async () => (await db.pool.query(`SELECT next_send_at FROM phone_numbers WHERE phone_number = $1`, [YIELD_NUMBER])).rows[0].next_send_at as Date;
    const nextFreeBefore = await nextFree();

    await dispatch(behind);
    const yielded = await row(behind);
    expect(yielded).toMatchObject({ status: 'scheduled', send_slot: new Date(before.getTime() + SPACING_MS) });
    // Nothing sent (the rate's record untouched), and its place kept: the number's next free slot is where it was.
    const [number] = (await db.pool.query(`SELECT sends_paced_until FROM phone_numbers WHERE phone_number = $1`, [YIELD_NUMBER])).rows;
    expect(number.sends_paced_until).toBeNull();
    expect(await nextFree()).toEqual(nextFreeBefore);
    const jobs = await db.pool.query(`SELECT run_at FROM outbox_jobs WHERE job_id LIKE 'dispatch-' || $1 || '-at-%'`, [behind]);
    expect(jobs.rows.map((j) => j.run_at.getTime())).toEqual([yielded.send_slot.getTime()]);

    await dispatch(ahead);
    expect((await row(ahead)).status).toBe('sent');
    await expectInOrderAtTheRate(YIELD_NUMBER, ahead, behind);
  });

  it('a claim that waited for the number\'s row behind the send of the one ahead (its snapshot still shows that one waiting) yields to the room that send leaves, not a spacing past it', async () => {
    const { ahead, behind } = await plantTwo(STALE_NUMBER);
    // The test holds the number's row; the claim of the one ahead waits for it first, then the
    // claim behind (its statement's snapshot taken before the one ahead is claimed).
    await dispatchQueuedBehindNumberRow(db, STALE_NUMBER, [() => dispatch(ahead), () => dispatch(behind)]);

    expect((await row(ahead)).status).toBe('sent');
    // Behind waits for the room the send ahead left (sends_paced_until at 1/s, no burst), not a slot later.
    const [state] = (await db.pool.query(
      `SELECT m.status, m.send_slot, p.sends_paced_until FROM messages m JOIN phone_numbers p ON p.phone_number = m.from_number WHERE m.id = $1`,
      [behind],
    )).rows;
    expect(state.status).toBe('scheduled');
    expect(state.send_slot).toEqual(state.sends_paced_until);
    await expectInOrderAtTheRate(STALE_NUMBER, ahead, behind);
  });
});
