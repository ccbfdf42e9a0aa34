import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { AppConfig } from '../../../src/platform/config/app-config.js';
import { PhoneNumbers } from '../../../src/modules/numbers/phone-numbers.service.js';
import { DispatchClaims } from '../../../src/modules/messaging/dispatch-claims.js';
import { SendOutcomes } from '../../../src/modules/messaging/send-outcomes.js';
import { SEND_CLAIM_MAX_AGE_MS, SEND_LATENESS_TOLERANCE_SECONDS } from '../../../src/modules/messaging/sender-pacing.js';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import { CLAIM_TOO_OLD } from '../../../src/modules/messaging/message-history-details.js';
import type { ApiClient } from '../../support/api-client.js';
import type { TestApp } from '../../support/app.js';
import type { TestDatabase } from '../../support/database.js';
import type { FakeCarrier } from '../../support/fake-carrier.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const LONG_CODE = '+17735550031';
const TOLL_FREE = '+18005550031';
const THROTTLED = '+17735550032';
const RACED = '+17735550033';
const LATE = '+17735550034';
const CLOSE = '+17735550035';
const EXPECT = '+17735550036';
const PAUSED = '+17735550037';
const RECOVERED = '+17735550038';
const RACED_TX = '+17735550039';
const ROW_HELD = '+17735550030';
const PAUSED_RACED = '+17735550029';
const PAUSED_RACED_TX = '+17735550028';
const RATE_RACED = '+17735550027';
const RATE_RACED_TX = '+17735550026';
const BURST = '+17735550025';
const STALLED = '+17735550024';
const HANDSET = '+13125550031';

/**
 * Sender pacing against a fake carrier: the number's settings through the API, a carrier 429 with
 * Retry-After (the message goes back to the queue under its lease, its number pauses), and two
 * dispatches claiming slots of one number at once, interleaved on purpose on the number's row.
 */
describe('sender pacing', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  let app: TestApp;
  let carrier: FakeCarrier;
  let customer: ApiClient;
  const numberIds: Record<string, string> = {};

  const history = (messageId: string) =>
    db.pool.query(`SELECT status FROM message_status_history WHERE message_id = $1 ORDER BY id`, [messageId]).then((r) => r.rows.map((h) => h.status as string));
  const setRate = (phoneNumber: string, rate: number | null) => customer.request('PATCH', `/v2/phone_numbers/${numberIds[phoneNumber]}`, { messaging: { send_rate_per_second: rate } });
  const send = async (from: string, text: string) => {
    const res = await customer.post('/v2/messages', { from, to: HANDSET, text });
    expect(res.status).toBe(202);
    return res.body.data.id as string;
  };
  const whenSent = (id: string) => waitFor(() => customer.get(`/v2/messages/${id}`), (r) => r.body.data.status === 'sent', { what: `${id} sent` });

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [LONG_CODE]: 'telnyx', [TOLL_FREE]: 'telnyx', [THROTTLED]: 'telnyx', [RACED]: 'telnyx', [LATE]: 'telnyx', [CLOSE]: 'telnyx', [EXPECT]: 'telnyx', [PAUSED]: 'telnyx', [RECOVERED]: 'telnyx', [RACED_TX]: 'telnyx', [ROW_HELD]: 'telnyx', [PAUSED_RACED]: 'telnyx', [PAUSED_RACED_TX]: 'telnyx', [RATE_RACED]: 'telnyx', [RATE_RACED_TX]: 'telnyx', [BURST]: 'telnyx', [STALLED]: 'telnyx' });
    ({ db, app, carrier, customer } = pipeline);
    const { body } = await customer.get('/v2/phone_numbers');
    for (const n of body.data) numberIds[n.phone_number] = n.id;
  });
  afterAll(() => pipeline.stop());

  it('shows each number the rate it is paced by: its own once set through PATCH, else MESSAGE_SEND_RATE_DEFAULT when set, else the default for its carrier and type', async () => {
    // The test app sets MESSAGE_SEND_RATE_DEFAULT=1000 (test/support/app.ts): what dispatch paces by, so what the number shows.
    const longCode = await customer.get(`/v2/phone_numbers/${numberIds[LONG_CODE]}`);
    expect(longCode.body.data.messaging).toEqual({ send_rate_per_second: 1000, send_rate_source: 'default', paused_until: null });
    // Without it (the production default), the carrier's default for the number's type.
    const withoutOverride = new PhoneNumbers(app.app.get(DataSource), new AppConfig());
    expect((await withoutOverride.get(customer.accountId, numberIds[LONG_CODE]))?.messaging).toEqual({ send_rate_per_second: 1, send_rate_source: 'default', paused_until: null });
    expect((await withoutOverride.get(customer.accountId, numberIds[TOLL_FREE]))?.messaging).toMatchObject({ send_rate_per_second: 20, send_rate_source: 'default' });
    const fractionalOverride = new PhoneNumbers(app.app.get(DataSource), Object.assign(new AppConfig(), { MESSAGE_SEND_RATE_DEFAULT: 2.5 }));
    expect((await fractionalOverride.get(customer.accountId, numberIds[TOLL_FREE]))?.messaging).toMatchObject({ send_rate_per_second: 2.5, send_rate_source: 'default' });

    const set = await setRate(LONG_CODE, 4.5);
    expect(set.status).toBe(200);
    expect(set.body.data.messaging).toMatchObject({ send_rate_per_second: 4.5, send_rate_source: 'number' });
    expect((await withoutOverride.get(customer.accountId, numberIds[LONG_CODE]))?.messaging).toMatchObject({ send_rate_per_second: 4.5, send_rate_source: 'number' });
    // Voice settings are kept by a PATCH that names only messaging, and the other way round.
    const voice = await customer.request('PATCH', `/v2/phone_numbers/${numberIds[LONG_CODE]}`, { voice: { ring_plan: { targets: [{ to: HANDSET }] } } });
    expect(voice.body.data.messaging.send_rate_per_second).toBe(4.5);
    expect((await setRate(LONG_CODE, null)).body.data).toMatchObject({ messaging: { send_rate_per_second: 1000, send_rate_source: 'default' }, voice: { ring_plan: { targets: [{ to: HANDSET }] } } });
  });

  it.each([[0.5], [0.01], [12.25], [1000]])('takes a fractional or whole send_rate_per_second %p (at most 2 decimals), stored and shown as given', async (rate) => {
    const res = await setRate(TOLL_FREE, rate);
    expect(res.status).toBe(200);
    expect(res.body.data.messaging).toMatchObject({ send_rate_per_second: rate, send_rate_source: 'number' });
    const [row] = (await db.pool.query(`SELECT send_rate_per_second::text AS rate FROM phone_numbers WHERE id = $1`, [numberIds[TOLL_FREE]])).rows;
    expect(Number(row.rate)).toBe(rate);
    expect((await setRate(TOLL_FREE, null)).body.data.messaging.send_rate_source).toBe('default');
  });

  it.each([[0], [-1], [-0.5], [1001], [1e9], [0.001], [12.345], ['10'], ['0.5'], [true], [{}], [[]], [undefined]])(
    'refuses send_rate_per_second %p with 422 naming the field, changing nothing',
    async (rate) => {
      const res = await customer.request('PATCH', `/v2/phone_numbers/${numberIds[TOLL_FREE]}`, { messaging: { send_rate_per_second: rate } });
      expect(res.status).toBe(422);
      expect(res.body.errors.length).toBeGreaterThan(0);
      expect(JSON.stringify(res.body.errors)).toContain('send_rate_per_second');
      expect((await customer.get(`/v2/phone_numbers/${numberIds[TOLL_FREE]}`)).body.data.messaging.send_rate_source).toBe('default');
    },
  );

  it.each([
    ['a number too large for a double (JSON 1e400: Infinity)', '{"messaging":{"send_rate_per_second":1e400}}', 'send_rate_per_second'],
    ['messaging not an object', '{"messaging":"fast"}', 'messaging'],
    ['messaging null', '{"messaging":null}', 'messaging'],
  ])('refuses %s with 422 (errors[]), never a 500', async (_what, body, field) => {
    const res = await fetch(`${customer.baseUrl}/v2/phone_numbers/${numberIds[TOLL_FREE]}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${customer.apiKey}`, 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(422);
    const { errors } = (await res.json()) as { errors: unknown[] };
    expect(errors.length).toBeGreaterThan(0);
    expect(JSON.stringify(errors)).toContain(field);
  });

  it('a queued message shows when it is expected to go out from the moment it is accepted: the 202 names its number\'s next free slot, the slot it is then given', async () => {
    // 0.1 a second: slots 10 s apart, no burst allowance.
    expect((await setRate(EXPECT, 0.1)).status).toBe(200);
    const first = await customer.post('/v2/messages', { from: EXPECT, to: HANDSET, text: 'first' });
    expect(first.status).toBe(202);
    // Nothing ahead of it: now (the accepting transaction's time, its created_at).
    expect(first.body.data.expected_send_at).toBe(first.body.data.created_at);
    await whenSent(first.body.data.id);
    const [{ send_slot: firstSlot }] = (await db.pool.query(`SELECT send_slot FROM messages WHERE id = $1`, [first.body.data.id])).rows;

    // The next one is accepted behind it: its 202 names the next free slot, 10 s after the first's.
    const second = await customer.post('/v2/messages', { from: EXPECT, to: HANDSET, text: 'second' });
    expect(second.status).toBe(202);
    expect(second.body.data.status).toBe('queued');
    expect(new Date(second.body.data.expected_send_at).getTime()).toBe(firstSlot.getTime() + 10_000);
    // ... which is the slot dispatch gives it, shown the same afterwards.
    const slotted = await waitFor(
      () => db.pool.query(`SELECT send_slot FROM messages WHERE id = $1`, [second.body.data.id]).then((r) => r.rows[0].send_slot as Date | null),
      (slot) => slot !== null,
      { what: 'the second message given its slot' },
    );
    expect(slotted!.getTime()).toBe(firstSlot.getTime() + 10_000);
    const shown = await customer.get(`/v2/messages/${second.body.data.id}`);
    expect(shown.body.data).toMatchObject({ status: 'queued', expected_send_at: second.body.data.expected_send_at });
  });

  it('a message back in the queue after a carrier 429 shows the end of its number\'s pause as its expected send time, not null', async () => {
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    const id = (await customer.post('/v2/messages', { from: PAUSED, to: HANDSET, text: 'throttled', send_at: sendAt })).body.data.id as string;
    const uow = app.app.get(UnitOfWork);
    const outcome = await uow.run((tx) => app.app.get(DispatchClaims).claimForDispatch(tx, id, 60));
    if (outcome.kind !== 'claimed') throw new Error(`expected a claim, got ${outcome.kind}`);
    // The carrier answered 429 with Retry-After 30.
    const resumeAt = await uow.run((tx) => app.app.get(SendOutcomes).requeueThrottled(tx, outcome.claim, 30));
    expect(resumeAt).toBeInstanceOf(Date);

    const number = await customer.get(`/v2/phone_numbers/${numberIds[PAUSED]}`);
    const message = await customer.get(`/v2/messages/${id}`);
    expect(message.body.data.status).toBe('queued');
    expect(message.body.data.expected_send_at).toBe(resumeAt!.toISOString());
    // (the number's view formats it in SQL: the same instant, to the millisecond)
    expect(Math.abs(new Date(number.body.data.messaging.paused_until).getTime() - resumeAt!.getTime())).toBeLessThanOrEqual(1);
  });

  it('a carrier 429 puts the message back in the queue behind its Retry-After and pauses its number: each message sent once, billed once, slots after the pause', async () => {
    // 2 segments per second: the second message's slot (0.5 s after the first) falls inside the pause.
    expect((await setRate(THROTTLED, 2)).status).toBe(200);
    carrier.answerNext({ status: 429, headers: { 'retry-after': '2' }, body: { errors: [{ code: '10010', title: 'Too many requests' }] } });
    const ids = [await send(THROTTLED, 'first'), await send(THROTTLED, 'second')];
    for (const id of ids) await whenSent(id);

    const histories = await Promise.all(ids.map(history));
    const throttled = ids.filter((_, i) => histories[i].join() === 'queued,sending,queued,sending,sent');
    expect(throttled).toHaveLength(1);
    expect(histories.filter((h) => h.join() === 'queued,sending,sent')).toHaveLength(1);
    // the 429 and the accepted send for the throttled message, one send for the other
    expect(ids.map((id) => carrier.sendsFor(id).length).sort()).toEqual([1, 2]);
    for (const id of ids) {
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
      expect(await pipeline.events('message.sent', id)).toBe(1);
      expect(await pipeline.events('message.failed', id)).toBe(0);
    }
    // The retry is due when the pause ends: the carrier's Retry-After after the 429 was recorded.
    const { rows } = await db.pool.query(
      `SELECT j.run_at, j.queue, p.send_paused_until, (SELECT max(at) FROM message_status_history h WHERE h.message_id = $1 AND h.status = 'queued') AS requeued_at
         FROM outbox_jobs j, phone_numbers p WHERE j.job_id LIKE 'dispatch-' || $1 || '-retry-%' AND p.phone_number = $2`,
      [throttled[0], THROTTLED],
    );
    expect(rows).toHaveLength(1);
    // A customer message's, in `messaging` (a compliance reply's goes to `messaging-replies`: compliance-replies.test.ts).
    expect(rows[0].queue).toBe('messaging');
    expect(rows[0].run_at.getTime()).toBe(rows[0].send_paused_until.getTime());
    expect(rows[0].run_at.getTime() - rows[0].requeued_at.getTime()).toBeGreaterThanOrEqual(2000);
    // Neither went out inside the pause, and they went out a slot (0.5 s) apart.
    const slots = await db.pool.query(`SELECT send_slot FROM messages WHERE id = ANY($1) ORDER BY send_slot`, [ids]);
    for (const { send_slot: slot } of slots.rows) expect(slot.getTime()).toBeGreaterThanOrEqual(rows[0].send_paused_until.getTime());
    expect(slots.rows[1].send_slot.getTime() - slots.rows[0].send_slot.getTime()).toBeGreaterThanOrEqual(500);
  });

  it('slots that fell due together (their jobs held up) do not go out as a burst: the send that does not fit takes the next slot the burst allows', async () => {
    // 0.1 a second: a 10 s spacing, and no burst beyond one message.
    expect((await setRate(LATE, 0.1)).status).toBe(200);
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    const ids: string[] = [];
    for (const text of ['a', 'b']) ids.push((await customer.post('/v2/messages', { from: LATE, to: HANDSET, text, send_at: sendAt })).body.data.id);
    // Planted: both were given slots long ago, and their jobs only run now.
    await db.pool.query(`UPDATE messages SET send_slot = now() - interval '1 minute' WHERE id = ANY($1)`, [ids]);
    const claim = (id: string) => app.app.get(UnitOfWork).run((tx) => app.app.get(DispatchClaims).claimForDispatch(tx, id, 60));
    expect((await claim(ids[0])).kind).toBe('claimed');
    expect((await claim(ids[1])).kind).toBe('paced');

    // b's new slot is where a's send (10 s) ends: the burst allows nothing sooner; its job is due then.
    const [number] = (await db.pool.query(`SELECT next_send_at, sends_paced_until FROM phone_numbers WHERE phone_number = $1`, [LATE])).rows;
    const [held] = (await db.pool.query(`SELECT status, send_slot FROM messages WHERE id = $1`, [ids[1]])).rows;
    expect(held).toEqual({ status: 'scheduled', send_slot: number.sends_paced_until });
    expect(number.next_send_at.getTime() - held.send_slot.getTime()).toBe(10_000);
    const jobs = await db.pool.query(`SELECT run_at FROM outbox_jobs WHERE job_id LIKE 'dispatch-' || $1 || '-at-%'`, [ids[1]]);
    expect(jobs.rows.map((j) => j.run_at.getTime())).toEqual([held.send_slot.getTime()]);
  });

  it('a slot less than the burst allowance ahead is sent at once (no job due later, no relay pass); one further ahead waits for it', async () => {
    // 10 a second: a burst allowance of 0.5 s - 1/rate = 400 ms.
    expect((await setRate(CLOSE, 10)).status).toBe(200);
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    const ids: string[] = [];
    for (const text of ['near', 'far']) ids.push((await customer.post('/v2/messages', { from: CLOSE, to: HANDSET, text, send_at: sendAt })).body.data.id);
    const claimBehind = (id: string, aheadMs: number) =>
      app.app.get(UnitOfWork).run(async (tx) => {
        // Planted in the claim's own transaction (so the machine's speed does not move it): the
        // number's next free slot is `aheadMs` from now, as if earlier messages took the ones before.
        await tx.query(`UPDATE phone_numbers SET next_send_at = clock_timestamp() + make_interval(secs => $2 / 1000.0), sends_paced_until = NULL WHERE phone_number = $1`, [CLOSE, aheadMs]);
        return app.app.get(DispatchClaims).claimForDispatch(tx, id, 60);
      });
    expect((await claimBehind(ids[0], 200)).kind).toBe('claimed');
    expect((await claimBehind(ids[1], 600)).kind).toBe('paced');

    // The near one went at once with its slot 200 ms ahead; only the far one has a job due at its slot.
    const [near] = (await db.pool.query(
      `SELECT extract(epoch FROM m.send_slot - h.at) * 1000 AS ahead_ms FROM messages m JOIN message_status_history h ON h.message_id = m.id AND h.status = 'sending' WHERE m.id = $1`,
      [ids[0]],
    )).rows;
    expect(Number(near.ahead_ms)).toBeGreaterThanOrEqual(200);
    expect(Number(near.ahead_ms)).toBeLessThan(400);
    const slotJobs = await db.pool.query(`SELECT data->>'messageId' AS id FROM outbox_jobs WHERE job_id LIKE 'dispatch-%-at-%' AND data->>'messageId' = ANY($1)`, [ids]);
    expect(slotJobs.rows.map((j) => j.id)).toEqual([ids[1]]);
    await waitFor(() => db.count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'sent'`, [ids[1]]), (n) => n === 1, { what: 'the far one sent at its slot' });
  });

  it('a message taken again after its lease ended (the run holding it died) is paced like any send: no second send inside the number\'s spacing', async () => {
    // 0.1 a second: a send every 10 s, no burst allowance.
    expect((await setRate(RECOVERED, 0.1)).status).toBe(200);
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    const id = (await customer.post('/v2/messages', { from: RECOVERED, to: HANDSET, text: 'recovered', send_at: sendAt })).body.data.id as string;
    const uow = app.app.get(UnitOfWork);
    const claim = () => uow.run((tx) => app.app.get(DispatchClaims).claimForDispatch(tx, id, 60));
    const first = await claim();
    if (first.kind !== 'claimed') throw new Error(`expected a claim, got ${first.kind}`);
    // While its lease lasts, another run leaves it alone.
    expect((await claim()).kind).toBe('leased');
    // Planted: the run died, its lease has ended (it may or may not have reached the carrier).
    await db.pool.query(`UPDATE messages SET claimed_until = now() - interval '1 second' WHERE id = $1`, [id]);

    // Taken again at once it would be a second send inside the 10 s: it waits for a new slot instead.
    const again = await claim();
    expect(again.kind).toBe('paced');
    const [row] = (await db.pool.query(
      `SELECT m.status, m.claim_token, m.send_slot, p.next_send_at, p.sends_paced_until FROM messages m JOIN phone_numbers p ON p.phone_number = m.from_number WHERE m.id = $1`,
      [id],
    )).rows;
    expect(row).toMatchObject({ status: 'sending', claim_token: first.claim.token });
    expect(row.send_slot.getTime()).toBe(row.sends_paced_until.getTime());
    expect(row.next_send_at.getTime() - row.send_slot.getTime()).toBe(10_000);
    const jobs = await db.pool.query(`SELECT run_at FROM outbox_jobs WHERE job_id LIKE 'dispatch-' || $1 || '-at-%'`, [id]);
    expect(jobs.rows.map((j) => j.run_at.getTime())).toEqual([row.send_slot.getTime()]);

    // At that slot (planted: the number's spacing has passed) it is taken again, under a new lease.
    await db.pool.query(`UPDATE phone_numbers SET sends_paced_until = now() - interval '1 second', next_send_at = now() - interval '1 second' WHERE phone_number = $1`, [RECOVERED]);
    await db.pool.query(`UPDATE messages SET send_slot = now() - interval '1 second' WHERE id = $1`, [id]);
    const taken = await claim();
    if (taken.kind !== 'claimed') throw new Error(`expected a claim, got ${taken.kind}`);
    expect(taken.claim.token).not.toBe(first.claim.token);
  });

  const claimThrough = {
    // what dispatch runs: one autocommit statement
    'one autocommit statement (claimNow)': async (id: string) => (await app.app.get(DispatchClaims).claimNow(id, 60))!,
    // its fallback when another transaction holds the message's row
    'the transaction (claimForDispatch)': (id: string) => app.app.get(UnitOfWork).run((tx) => app.app.get(DispatchClaims).claimForDispatch(tx, id, 60)),
  };

  it.each(Object.keys(claimThrough) as (keyof typeof claimThrough)[])('two dispatches claiming slots of one number at once through %s get distinct slots one rate apart (the number row is the guard)', async (path) => {
    // a number of its own per path
    const raced = path === 'the transaction (claimForDispatch)' ? RACED_TX : RACED;
    expect((await setRate(raced, 2)).status).toBe(200);
    // Scheduled a day ahead: their own jobs are not due, so only the claims below run now.
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    const ids: string[] = [];
    for (const text of ['a', 'b']) ids.push((await customer.post('/v2/messages', { from: raced, to: HANDSET, text, send_at: sendAt })).body.data.id);

    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT FROM phone_numbers WHERE id = $1 FOR UPDATE`, [numberIds[raced]]);
      const claims = Promise.all(ids.map(claimThrough[path]));
      // both claims wait for the number's row the test holds
      await waitFor(
        () => db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`),
        (n) => n >= 2,
        { what: 'both slot claims waiting on the number row' },
      );
      await holder.query('COMMIT');
      const outcomes = await claims;
      expect(outcomes.map((o) => o.kind).sort()).toEqual(['claimed', 'paced']);
    } finally {
      holder.release();
    }
    const { rows } = await db.pool.query(`SELECT send_slot FROM messages WHERE id = ANY($1) ORDER BY send_slot`, [ids]);
    expect(rows[1].send_slot.getTime() - rows[0].send_slot.getTime()).toBe(500);
    const [number] = (await db.pool.query(`SELECT next_send_at FROM phone_numbers WHERE id = $1`, [numberIds[raced]])).rows;
    expect(number.next_send_at.getTime() - rows[1].send_slot.getTime()).toBe(500);
    // The paced one goes out at its slot, through the job the claim wrote (and the file ends with nothing in flight).
    await waitFor(() => db.count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND status = 'sent'`, [ids]), (n) => n === 1, { what: 'the paced message sent at its slot' });
  });

  /**
   * Claims `id` through `path` while the test's own transaction holds `change` to the number's row
   * uncommitted: the claim's snapshot is taken before it commits, its lock on the row after.
   */
  const claimWhileNumberChanges = async (path: keyof typeof claimThrough, id: string, numberId: string, change: string) => {
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`UPDATE phone_numbers SET ${change} WHERE id = $1`, [numberId]);
      const claim = claimThrough[path](id);
      await waitFor(
        () => db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`),
        (n) => n >= 1,
        { what: "the claim waiting on the number's row" },
      );
      await holder.query('COMMIT');
      return await claim;
    } finally {
      holder.release();
    }
  };

  it.each(Object.keys(claimThrough) as (keyof typeof claimThrough)[])(
    "a claim that waited for the number's row while a carrier 429 paused it (through %s) gives its slot, now inside the pause, a new one after it, with a job due then",
    async (path) => {
      const number = path === 'the transaction (claimForDispatch)' ? PAUSED_RACED_TX : PAUSED_RACED;
      const sendAt = new Date(Date.now() + 86_400_000).toISOString();
      const id = (await customer.post('/v2/messages', { from: number, to: HANDSET, text: 'slot in a pause', send_at: sendAt })).body.data.id as string;
      // Planted: its slot is due now (its job runs), and the number is not paused yet.
      await db.pool.query(`UPDATE messages SET send_slot = now() WHERE id = $1`, [id]);

      // A 429 for another message of the number, recorded in the transaction the test holds.
      const outcome = await claimWhileNumberChanges(path, id, numberIds[number], `send_paused_until = now() + interval '30 seconds'`);
      // Not sent inside the pause, and not left without a job: a new slot after the pause, due then.
      expect(outcome.kind).toBe('paced');
      const [row] = (await db.pool.query(`SELECT m.send_slot, p.send_paused_until FROM messages m JOIN phone_numbers p ON p.id = $2 WHERE m.id = $1`, [id, numberIds[number]])).rows;
      expect(row.send_slot.getTime()).toBeGreaterThanOrEqual(row.send_paused_until.getTime());
      const jobs = await db.pool.query(`SELECT run_at FROM outbox_jobs WHERE job_id LIKE 'dispatch-' || $1 || '-at-%'`, [id]);
      expect(jobs.rows.map((j) => j.run_at.getTime())).toEqual([row.send_slot.getTime()]);
    },
  );

  it.each(Object.keys(claimThrough) as (keyof typeof claimThrough)[])(
    "a claim that waited for the number's row while its rate was lowered (through %s) spaces its slot at the new rate",
    async (path) => {
      const number = path === 'the transaction (claimForDispatch)' ? RATE_RACED_TX : RATE_RACED;
      expect((await setRate(number, 20)).status).toBe(200);
      const sendAt = new Date(Date.now() + 86_400_000).toISOString();
      const id = (await customer.post('/v2/messages', { from: number, to: HANDSET, text: 'paced at the new rate', send_at: sendAt })).body.data.id as string;

      // The rate lowered to 1/s in the transaction the test holds: 20/s in the claim's snapshot, 1/s on the row it locks.
      const outcome = await claimWhileNumberChanges(path, id, numberIds[number], 'send_rate_per_second = 1');
      // Its slot now; the number's next one a second (1/s) after it, not 50 ms (20/s).
      expect(outcome.kind).toBe('claimed');
      const [row] = (await db.pool.query(
        `SELECT extract(epoch FROM p.next_send_at - m.send_slot)::float8 AS spaced FROM messages m JOIN phone_numbers p ON p.id = $2 WHERE m.id = $1`,
        [id, numberIds[number]],
      )).rows;
      expect(row.spaced).toBeCloseTo(1, 6);
    },
  );

  it('the autocommit claim leaves a message whose row another transaction holds to the transaction that waits for it (its snapshot never predates that wait)', async () => {
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    const id = (await customer.post('/v2/messages', { from: ROW_HELD, to: HANDSET, text: 'held', send_at: sendAt })).body.data.id as string;
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT FROM messages WHERE id = $1 FOR UPDATE`, [id]);
      expect(await app.app.get(DispatchClaims).claimNow(id, 60)).toBeUndefined();
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect((await db.pool.query(`SELECT status FROM messages WHERE id = $1`, [id])).rows[0].status).toBe('scheduled');
    // free, it is claimed by the statement alone; a message gone or past sending is done
    expect((await app.app.get(DispatchClaims).claimNow(id, 60))?.kind).toBe('claimed');
    expect((await app.app.get(DispatchClaims).claimNow('msg_none', 60))?.kind).toBe('done');
  });

  /**
   * Behaviour only: how close a burst comes to its rate (the 5 %) is a performance goal,
   * measured by `npm run bench:pacing -- --phases bursts` (docs/benchmarks.md), never asserted here:
   * an upper bound on the burst's span, or on any one gap, fails on a loaded machine whatever the
   * code does (a gap of 1.4 s at 2/s in a full run at load average 12).
   */
  it('a burst of 20 at 2/s is sent once each, never faster than the rate (no gap, nor run of gaps, below the spacing less a clock tolerance), and loses no slot (no gap of two spacings the machine\'s own delays do not account for)', async () => {
    const [rate, count] = [2, 20];
    const spacingMs = 1000 / rate;
    // Two sends may be claimed up to SEND_LATENESS_TOLERANCE_SECONDS closer than their spacing (a
    // send claimed just late counts at its slot), and arrive a little closer still: the carrier's
    // clock reads them after HTTP and an event loop the app shares with the test (a claim waits at
    // most SEND_CLAIM_MAX_AGE_MS for its request, or is given back).
    const clockToleranceMs = SEND_LATENESS_TOLERANCE_SECONDS * 1000 + SEND_CLAIM_MAX_AGE_MS;
    expect((await setRate(BURST, rate)).status).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await send(BURST, `burst ${i}`));
    await waitFor(() => db.count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND status = 'sent'`, [ids]), (n) => n === count, { what: 'the burst sent', timeoutMs: 60_000 });

    // Every message reached the carrier once.
    expect(ids.map((id) => carrier.handsetFor(id).length)).toEqual(ids.map(() => 1));
    const arrivals = carrier.handset.filter((s) => s.from === BURST).map((s) => s.at.getTime()).sort((a, b) => a - b);
    expect(arrivals).toHaveLength(count);
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]);
    // Recorded for whoever reads the run (where a slow gap comes from: the slot's job handed over late, a claim that lost its place).
    console.log(`pacing: ${count} at ${rate}/s, arrival gaps at the carrier (ms): ${gaps.join(' ')}; total ${arrivals.at(-1)! - arrivals[0]} ms (ideal ${(count - 1) * spacingMs})`);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(spacingMs - clockToleranceMs);
    // Nor faster over any run of sends: the tolerance never adds up (k sends span at least k - 1 spacings, less it).
    for (let i = 0; i < count; i++) for (let j = i + 1; j < count; j++) expect(arrivals[j] - arrivals[i]).toBeGreaterThanOrEqual((j - i) * spacingMs - clockToleranceMs);
    // No slot lost: a place left empty shows as a gap of two spacings or more. The machine alone
    // can cause one (a slot's job handed over late, a claim given back because its process
    // stalled: both by design under load), so each such gap must be matched by one of those,
    // read from the database: a claim more than SEND_CLAIM_MAX_AGE_MS after the job that led to
    // it was due, or a claim given back (CLAIM_TOO_OLD). A place lost by the pacing's own logic
    // (a send claimed on time, then taking a place behind the queue) is matched by none.
    const lostPlaces = gaps.filter((gap) => gap >= 2 * spacingMs).length;
    const machineDelays = await db.count(
      `SELECT count(*) FROM message_status_history h
        WHERE h.message_id = ANY($1)
          AND (h.detail = $2
               OR (h.status = 'sending' AND h.at - (SELECT max(j.run_at) FROM outbox_jobs j WHERE j.data->>'messageId' = h.message_id AND j.run_at <= h.at) > make_interval(secs => $3)))`,
      [ids, CLAIM_TOO_OLD, SEND_CLAIM_MAX_AGE_MS / 1000],
    );
    console.log(`pacing: gaps of two spacings or more ${lostPlaces}; claims the machine delayed or gave back ${machineDelays}`);
    expect(lostPlaces).toBeLessThanOrEqual(machineDelays);
  });

  it('a claim held too long after it was decided (the process stalled) is given back unsent and queued again, then sent once; a claim that only waited for its number\'s row is sent', async () => {
    const sendAt = new Date(Date.now() + 86_400_000).toISOString();
    const post = async (text: string) => (await customer.post('/v2/messages', { from: STALLED, to: HANDSET, text, send_at: sendAt })).body.data.id as string;
    const [stalled, waited] = [await post('stalled'), await post('waited')];
    const claim = async (id: string) => {
      const outcome = await app.app.get(UnitOfWork).run((tx) => app.app.get(DispatchClaims).claimForDispatch(tx, id, 60));
      if (outcome.kind !== 'claimed') throw new Error(`expected a claim of ${id}, got ${outcome.kind}`);
      return outcome.claim;
    };
    const handler = app.app.get(DispatchMessageHandler);

    // Planted: this process asked for the claim, the database decided it, then the process stalled a second before sending.
    const stalledClaim = await claim(stalled);
    const secondAgo = Date.now() - 1000;
    await handler.sendClaimed({ ...stalledClaim, decided_at: new Date(secondAgo) }, secondAgo, { attempt: 1 });
    expect(carrier.sendsFor(stalled)).toHaveLength(0);
    const [given] = (await db.pool.query(`SELECT status, claimed_until, send_slot FROM messages WHERE id = $1`, [stalled])).rows;
    expect(given).toEqual({ status: 'queued', claimed_until: null, send_slot: null });
    const lastChange = (await db.pool.query(`SELECT status, detail FROM message_status_history WHERE message_id = $1 ORDER BY id DESC LIMIT 1`, [stalled])).rows[0];
    expect(lastChange).toEqual({ status: 'queued', detail: CLAIM_TOO_OLD });
    // Queued again with a job due at once (taken again, it is paced like any send), and sent once.
    const jobs = await db.pool.query(`SELECT run_at <= clock_timestamp() AS due FROM outbox_jobs WHERE job_id = 'dispatch-' || $1 || '-stale-' || $2`, [stalled, stalledClaim.token]);
    expect(jobs.rows).toEqual([{ due: true }]);
    await whenSent(stalled);
    expect(carrier.sendsFor(stalled)).toHaveLength(1);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [stalled])).toBe(1);

    // Asked for long ago by this process's clock (a wait for the number's row), decided just now: sent.
    const waitedClaim = await claim(waited);
    await handler.sendClaimed(waitedClaim, Date.now() - 5000, { attempt: 1 });
    expect(carrier.sendsFor(waited)).toHaveLength(1);
    expect(await history(waited)).toEqual(['scheduled', 'sending', 'sent']);
  });
});
