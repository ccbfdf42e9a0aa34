import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../support/api-client.js';
import type { TestApp } from '../support/app.js';
import type { TestDatabase } from '../support/database.js';
import type { SandboxChild } from '../support/sandbox-child.js';
import { startAppAgainstSandbox, type AppAgainstSandbox } from '../support/sandbox-app.js';
import { waitFor } from '../support/wait.js';

const PACED = '+17735550041';
const UNPACED = '+17735550042';
const THROTTLED = '+17735550043';
const HANDSET = '+13125550041';
const RATE = 20;
const BURST = 200;

/**
 * The app against the carrier sandbox with a throughput limit per sending number (429 +
 * Retry-After past it, counted): a burst to one number drains at its rate without one 429 or one
 * double while another number's messages go out at once; a number whose carrier limit is below
 * the rate we were told still sends everything once; and STOP from a handset.
 */
describe('pacing and opt-outs against the carrier sandbox', () => {
  let db: TestDatabase;
  let app: TestApp;
  let sandbox: SandboxChild;
  let customer: ApiClient;

  const count = (sql: string, params: unknown[] = []) => db.count(sql, params);
  const events = (type: string, resourceId: string) => count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND payload->>'id' = $2`, [type, resourceId]);
  const sandboxControl = async (path: string, body: unknown) => {
    const res = await fetch(`${sandbox.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return res.json();
  };
  const sendAll = async (from: string, n: number, label: string, sendAt?: string): Promise<string[]> => {
    const ids: string[] = [];
    // 10 requests at a time: a burst, within the client's bounds
    for (let i = 0; i < n; i += 10) {
      const batch = await Promise.all(Array.from({ length: Math.min(10, n - i) }, (_, j) => customer.post('/v2/messages', { from, to: HANDSET, text: `${label} ${i + j}`, send_at: sendAt })));
      for (const res of batch) {
        expect(res.status).toBe(202);
        ids.push(res.body.data.id);
      }
    }
    return ids;
  };
  const allSent = (ids: string[]) =>
    waitFor(() => count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND status IN ('sent', 'delivered')`, [ids]), (n) => n === ids.length, {
      timeoutMs: 40_000,
      what: `${ids.length} messages sent`,
    }).catch(async (err: Error) => {
      // What the messages still waiting were doing, and their jobs: a stall explains itself.
      const waiting = await db.pool.query(
        `SELECT m.id, m.status, m.claimed_until, m.send_slot, clock_timestamp() AS now,
                (SELECT json_agg(json_build_object('job', j.job_id, 'run_at', j.run_at, 'relayed_at', j.relayed_at, 'redrive_at', j.redrive_at, 'completed_at', j.completed_at, 'attempts', j.attempts, 'error', j.last_error) ORDER BY j.created_at) FROM outbox_jobs j WHERE j.data->>'messageId' = m.id) AS jobs,
                (SELECT json_agg(h.status || '@' || h.at ORDER BY h.at) FROM message_status_history h WHERE h.message_id = m.id) AS history
           FROM messages m WHERE m.id = ANY($1) AND m.status NOT IN ('sent', 'delivered')`,
        [ids],
      );
      const numbers = await db.pool.query(`SELECT phone_number, send_paused_until FROM phone_numbers`);
      throw new Error(`${err.message}\nwaiting: ${JSON.stringify(waiting.rows, null, 1)}\nnumbers: ${JSON.stringify(numbers.rows)}\nsandbox: ${JSON.stringify((await sandbox.stats()).sends)}`);
    });
  /** Per message: its usage rows and message.sent events, where either is not exactly 1. */
  const notOnce = (ids: string[]) =>
    db.pool
      .query(
        `SELECT m.id FROM messages m WHERE m.id = ANY($1)
            AND ((SELECT count(*) FROM usage_records u WHERE u.resource_id = m.id) <> 1
              OR (SELECT count(*) FROM outbound_events e WHERE e.type = 'message.sent' AND e.payload->>'id' = m.id) <> 1)`,
        [ids],
      )
      .then((r) => r.rows.map((row) => row.id));

  let running: AppAgainstSandbox | undefined;

  beforeAll(async () => {
    running = await startAppAgainstSandbox();
    ({ db, app, sandbox } = running);
    customer = await ApiClient.forNewAccount(app);
    for (const n of [PACED, UNPACED, THROTTLED]) await customer.assignNumber(n, 'telnyx');
    const paced = (await customer.get('/v2/phone_numbers')).body.data.find((n: { phone_number: string }) => n.phone_number === PACED);
    expect((await customer.request('PATCH', `/v2/phone_numbers/${paced.id}`, { messaging: { send_rate_per_second: RATE } })).status).toBe(200);
    // The carrier's limits: PACED's is the rate we were told, THROTTLED's is lower than ours (1000 in tests).
    await sandboxControl('/sandbox/throughput', { per_number: 0, numbers: { [PACED]: RATE, [THROTTLED]: 5 } });
  });
  afterAll(() => running?.stop());
  beforeEach(async () => {
    await waitFor(() => sandbox.stats(), (s) => s.webhooks.pending === 0, { timeoutMs: 30_000, what: 'the sandbox to finish its webhooks' });
    await sandboxControl('/sandbox/stats/reset', {});
  });

  it(`${BURST} messages to one number drain at its rate (${RATE}/s) with 0 carrier 429s and 0 doubles, while another number's messages go out at once`, async () => {
    const first = await sendAll(PACED, 20, 'paced');
    const unpaced = await sendAll(UNPACED, 5, 'unpaced');
    // The rest reach the number all at once, however fast this machine posts: scheduled a day
    // ahead, then their dispatch jobs made due together (planted: as jobs held up by an outage).
    const held = await sendAll(PACED, BURST - 20, 'paced', new Date(Date.now() + 86_400_000).toISOString());
    await db.pool.query(`UPDATE outbox_jobs SET run_at = now() WHERE data->>'messageId' = ANY($1) AND relayed_at IS NULL`, [held]);
    const paced = [...first, ...held];
    await allSent([...paced, ...unpaced]);

    const { sends } = await sandbox.stats();
    expect(sends.throttled).toBe(0);
    expect(sends.replayed).toBe(0);
    expect(sends.accepted_by_number).toEqual({ [PACED]: BURST, [UNPACED]: 5 });
    expect(await notOnce([...paced, ...unpaced])).toEqual([]);

    // Each send slot of the paced number is its own, at least 1/rate after the one before.
    const slots = await db.pool.query(
      `SELECT count(DISTINCT send_slot)::int AS distinct_slots, min(gap) AS min_gap FROM (
         SELECT send_slot, send_slot - lag(send_slot) OVER (ORDER BY send_slot) AS gap FROM messages WHERE id = ANY($1)) s`,
      [paced],
    );
    expect(slots.rows[0].distinct_slots).toBe(BURST);
    expect(await count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND send_slot IS NULL`, [paced])).toBe(0);
    expect(await count(`SELECT count(*) FROM (SELECT send_slot - lag(send_slot) OVER (ORDER BY send_slot) AS gap FROM messages WHERE id = ANY($1)) s WHERE gap < make_interval(secs => 1.0 / $2)`, [paced, RATE])).toBe(0);
    // Messages of the burst waited for their slot (a dispatch job due then: all but the burst
    // allowance of those due together); the other number's messages never did.
    const slotJobs = (ids: string[]) => count(`SELECT count(*) FROM outbox_jobs WHERE job_id LIKE 'dispatch-%-at-%' AND data->>'messageId' = ANY($1)`, [ids]);
    expect(await slotJobs(paced)).toBeGreaterThan(0);
    expect(await slotJobs(unpaced)).toBe(0);
    // ... and were sent before the paced number's backlog was through.
    const lastUnpacedSent = await db.pool.query(`SELECT max(at) AS at FROM message_status_history WHERE message_id = ANY($1) AND status = 'sent'`, [unpaced]);
    const lastPacedSlot = await db.pool.query(`SELECT max(send_slot) AS at FROM messages WHERE id = ANY($1)`, [paced]);
    expect(lastUnpacedSent.rows[0].at.getTime()).toBeLessThan(lastPacedSlot.rows[0].at.getTime());
  });

  it('a number whose carrier allows less than its rate is answered 429 + Retry-After, waits it out, and sends every message once', async () => {
    const ids = await sendAll(THROTTLED, 15, 'throttled');
    await allSent(ids);
    const { sends } = await sandbox.stats();
    expect(sends.throttled_by_number[THROTTLED]).toBeGreaterThan(0);
    expect(sends.accepted_by_number[THROTTLED]).toBe(15);
    expect(await notOnce(ids)).toEqual([]);
    expect(await count(`SELECT count(*) FROM messages WHERE id = ANY($1) AND status = 'failed'`, [ids])).toBe(0);
    // every 429 put its message back in the queue once: as many requeues as 429s (a claim given
    // back unsent, held too long on a loaded machine, is another requeue, and says so)
    expect(await count(`SELECT count(*) FROM message_status_history WHERE message_id = ANY($1) AND status = 'queued' AND detail IS NULL`, [ids])).toBe(15 + sends.throttled_by_number[THROTTLED]);
  });

  it('STOP texted from a handset (POST /sandbox/inbound, delivered three times, re-signed) opts it out once: one message.opted_out, one confirmation sent, sends to it refused (422)', async () => {
    const handset = '+13125550049';
    const stop = await fetch(`${sandbox.url}/sandbox/inbound`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sandbox-chaos': 'duplicate=3,resign' },
      body: JSON.stringify({ from: handset, to: UNPACED, text: ' stop ', carrier: 'telnyx' }),
    });
    expect(stop.status).toBe(202);
    await waitFor(() => count(`SELECT count(*) FROM message_opt_outs WHERE handset = $1 AND opted_out`, [handset]), (n) => n === 1, { what: 'the opt-out' });
    const reply = await waitFor(
      () => db.pool.query(`SELECT id, status, to_number FROM messages WHERE auto_reply = 'opt_out' AND to_number = $1`, [handset]).then((r) => r.rows),
      (rows) => rows.length === 1 && ['sent', 'delivered'].includes(rows[0].status),
      { what: 'the confirmation sent' },
    );
    await waitFor(() => sandbox.stats(), (s) => s.webhooks.pending === 0, { timeoutMs: 30_000, what: 'the copies of STOP delivered' });
    await waitFor(() => count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL`), (n) => n === 0, { what: 'every copy processed' });

    expect(await count(`SELECT count(*) FROM messages WHERE direction = 'inbound' AND from_number = $1`, [handset])).toBe(1);
    expect(await count(`SELECT count(*) FROM outbound_events WHERE type = 'message.opted_out' AND payload->>'handset' = $1`, [handset])).toBe(1);
    expect(await count(`SELECT count(*) FROM messages WHERE auto_reply IS NOT NULL AND to_number = $1`, [handset])).toBe(1);
    expect(await events('message.sent', reply[0].id)).toBe(1);
    expect((await sandbox.stats()).sends.accepted_by_number[UNPACED]).toBe(1);

    const refused = await customer.post('/v2/messages', { from: UNPACED, to: handset, text: 'after STOP' });
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0]).toMatchObject({ code: 'recipient_opted_out', source: { pointer: '/to' } });
  });
});
