import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_KEYWORD_REPLIES } from '../../../src/modules/messaging/opt-out-keywords.js';
import { telnyxInboundSms } from '../../support/carrier-signing.js';
import type { TestDatabase } from '../../support/database.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const FIRST = '+17735550051';
const SECOND = '+17735550052';

/** GET/PATCH /v2/messaging_settings: the opt-out scope and keyword replies, and what a scope change does to opt-outs already recorded. */
describe('messaging settings (opt-out scope, keyword replies)', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  const patch = (body: unknown) => pipeline.customer.request('PATCH', '/v2/messaging_settings', body);
  const send = (from: string, to: string) => pipeline.customer.post('/v2/messages', { from, to, text: 'hello' });

  async function inbound(from: string, to: string, text: string): Promise<void> {
    const { body } = telnyxInboundSms(to, text, { from });
    expect(await pipeline.deliverTelnyx(body)).toBe(200);
    const eventId = JSON.parse(body).data.id;
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [eventId]), (n) => n === 1, { what: 'the keyword processed' });
  }

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [FIRST]: 'telnyx', [SECOND]: 'telnyx' });
    db = pipeline.db;
  });
  afterAll(() => pipeline.stop());

  it('shows the defaults and the keywords, sets a reply (counted once, used for the next keyword), resets it with null, and refuses bad values naming the field', async () => {
    const initial = await pipeline.customer.get('/v2/messaging_settings');
    expect(initial.body.data).toMatchObject({
      record_type: 'messaging_settings',
      opt_out_scope: 'number',
      keyword_replies: { opt_out: { text: DEFAULT_KEYWORD_REPLIES.opt_out, default: true }, help: { default: true } },
      keywords: { opt_out: expect.arrayContaining(['STOP', 'UNSUBSCRIBE']), opt_in: expect.arrayContaining(['START']), help: ['HELP', 'INFO'] },
    });

    const set = await patch({ keyword_replies: { help: 'Acme alerts: reply STOP to end. Ünïcode costs more.' } });
    expect(set.status).toBe(200);
    expect(set.body.data.keyword_replies.help).toEqual({ text: 'Acme alerts: reply STOP to end. Ünïcode costs more.', default: false });
    const handset = '+13125550051';
    await inbound(handset, FIRST, 'help');
    const [reply] = (await db.pool.query(`SELECT text, encoding, segments FROM messages WHERE to_number = $1 AND auto_reply = 'help'`, [handset])).rows;
    expect(reply).toEqual({ text: 'Acme alerts: reply STOP to end. Ünïcode costs more.', encoding: 'UCS-2', segments: 1 });

    expect((await patch({ keyword_replies: { help: null } })).body.data.keyword_replies.help).toEqual({ text: DEFAULT_KEYWORD_REPLIES.help, default: true });
    for (const [body, field] of [
      [{ opt_out_scope: 'handset' }, 'opt_out_scope'],
      [{ keyword_replies: { opt_out: '' } }, 'opt_out'],
      [{ keyword_replies: { opt_in: 'x'.repeat(481) } }, 'opt_in'],
      [{ keyword_replies: { help: 7 } }, 'help'],
      [{ keyword_replies: 'quiet' }, 'keyword_replies'],
    ] as const) {
      const res = await patch(body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(JSON.stringify(res.body.errors)).toContain(field);
    }
    expect((await pipeline.customer.get('/v2/messaging_settings')).body.data).toEqual(initial.body.data);
  });

  it('a scope change carries the opt-outs recorded under the old scope: number → account stops every number, account → number keeps each number stopped', async () => {
    const handset = '+13125550052';
    await inbound(handset, FIRST, 'STOP');
    expect((await send(SECOND, handset)).status).toBe(202); // scope number: only FIRST is stopped

    expect((await patch({ opt_out_scope: 'account' })).body.data.opt_out_scope).toBe('account');
    for (const from of [FIRST, SECOND]) expect((await send(from, handset)).body.errors?.[0]?.code).toBe('recipient_opted_out');

    // An account-wide STOP from another handset, then back to per-number scope: both numbers stay stopped for it.
    const other = '+13125550053';
    await inbound(other, SECOND, 'STOP');
    expect((await patch({ opt_out_scope: 'number' })).body.data.opt_out_scope).toBe('number');
    for (const to of [handset, other]) for (const from of [FIRST, SECOND]) expect({ from, to, code: (await send(from, to)).body.errors?.[0]?.code }).toEqual({ from, to, code: 'recipient_opted_out' });
    // ... until the handset opts in again on a number: that number only.
    await inbound(other, FIRST, 'START');
    expect((await send(FIRST, other)).status).toBe(202);
    expect((await send(SECOND, other)).status).toBe(422);
  });

  it("each consent change moves opt_out_seq of the numbers it concerns, once, in its own statement; a repeat, a HELP or the same scope again moves nothing", async () => {
    /** opt_out_seq of FIRST and SECOND, as moved since `from`. */
    const seqs = async (from = [0, 0]) => {
      const { rows } = await db.pool.query(`SELECT phone_number, opt_out_seq::int AS seq FROM phone_numbers WHERE phone_number = ANY($1)`, [[FIRST, SECOND]]);
      return [FIRST, SECOND].map((n, i) => rows.find((r) => r.phone_number === n).seq - from[i]);
    };
    const handset = '+13125550054';
    let before = await seqs();
    await inbound(handset, FIRST, 'STOP'); // scope number: the number texted
    expect(await seqs(before)).toEqual([1, 0]);
    before = await seqs();
    await inbound(handset, FIRST, 'stop'); // no change of consent
    await inbound(handset, FIRST, 'HELP');
    expect(await patch({ opt_out_scope: 'number' })).toMatchObject({ status: 200 }); // the same scope
    expect(await seqs(before)).toEqual([0, 0]);
    expect(await patch({ opt_out_scope: 'account' })).toMatchObject({ status: 200 }); // every number of the account
    expect(await seqs(before)).toEqual([1, 1]);
    before = await seqs();
    await inbound(handset, SECOND, 'START'); // an account-wide opt-in: every number
    expect(await seqs(before)).toEqual([1, 1]);
    before = await seqs();
    expect(await patch({ opt_out_scope: 'number' })).toMatchObject({ status: 200 });
    expect(await seqs(before)).toEqual([1, 1]);
  });

  /**
   * Runs `competitor` while what `hold` wrote (uncommitted) is held, waits until a statement whose
   * text begins with `waiting` (pg_stat_activity keeps only the start of a long one) waits for a
   * row lock, then commits `hold`; returns what `competitor` returned.
   */
  async function whileHeld<T>(hold: (tx: { query: (sql: string, params?: unknown[]) => Promise<unknown> }) => Promise<void>, competitor: () => Promise<T>, waiting: string): Promise<T> {
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await hold(holder);
      const running = competitor();
      await waitFor(
        () => db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple') AND strpos(query, $1) > 0`, [waiting]),
        (n) => n >= 1,
        { what: `the statement with ${waiting} waiting on a row the test holds` },
      );
      await holder.query('COMMIT');
      return await running;
    } catch (err) {
      await holder.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      holder.release();
    }
  }

  it("a scope change (number → account) that waited while a STOP under the old scope committed carries that opt-out too: the account's other number refuses the handset", async () => {
    expect(await patch({ opt_out_scope: 'number' })).toMatchObject({ status: 200 });
    const handset = '+13125550055';
    const accountId = pipeline.customer.accountId;
    // What an inbound STOP to FIRST writes under scope number (OptOutKeywords.applyCtes), in a
    // transaction the test holds: the account's row shared (a keyword statement reads its scope
    // so), the consent row, FIRST's opt_out_seq moved. The scope change's snapshot is taken before
    // it commits; its locks after.
    const changed = await whileHeld(
      async (tx) => {
        await tx.query(`SELECT FROM accounts WHERE id = $1 FOR SHARE`, [accountId]);
        await tx.query(`INSERT INTO message_opt_outs (account_id, our_number, handset, opted_out, changed_by) VALUES ($1, $2, $3, true, 'msg_raced_stop')`, [accountId, FIRST, handset]);
        await tx.query(`UPDATE phone_numbers SET opt_out_seq = opt_out_seq + 1 WHERE account_id = $1 AND phone_number = $2`, [accountId, FIRST]);
      },
      () => patch({ opt_out_scope: 'account' }),
      'opt_out_scope AS previous',
    );
    expect(changed).toMatchObject({ status: 200, body: { data: { opt_out_scope: 'account' } } });
    for (const from of [FIRST, SECOND]) expect({ from, code: (await send(from, handset)).body.errors?.[0]?.code }).toEqual({ from, code: 'recipient_opted_out' });
    expect(await patch({ opt_out_scope: 'number' })).toMatchObject({ status: 200 });
  });

  it('a STOP whose statement waited while a scope change (number → account) committed counts for the account: the other number refuses the handset', async () => {
    expect(await patch({ opt_out_scope: 'number' })).toMatchObject({ status: 200 });
    const handset = '+13125550056';
    const accountId = pipeline.customer.accountId;
    const { body } = telnyxInboundSms(FIRST, 'STOP', { from: handset });
    const eventId = JSON.parse(body).data.id;
    // What MessagingSettings.update writes for number → account, in a transaction the test holds:
    // the account's row locked and its scope changed, every number's opt_out_seq moved. The
    // keyword statement's snapshot is taken before it commits.
    await whileHeld(
      async (tx) => {
        await tx.query(`SELECT FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
        await tx.query(`UPDATE accounts SET opt_out_scope = 'account' WHERE id = $1`, [accountId]);
        await tx.query(`UPDATE phone_numbers SET opt_out_seq = opt_out_seq + 1 WHERE account_id = $1 AND status IN ('ordering', 'active', 'releasing')`, [accountId]);
      },
      async () => expect(await pipeline.deliverTelnyx(body)).toBe(200),
      'evt_input',
    );
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [eventId]), (n) => n === 1, { what: 'the STOP processed' });
    for (const from of [FIRST, SECOND]) expect({ from, code: (await send(from, handset)).body.errors?.[0]?.code }).toEqual({ from, code: 'recipient_opted_out' });
    expect(await patch({ opt_out_scope: 'number' })).toMatchObject({ status: 200 });
  });
});
