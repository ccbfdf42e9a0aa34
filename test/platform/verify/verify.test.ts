import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { Invariants } from '../../../src/platform/verify/invariants.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { ApiClient } from '../../support/api-client.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { encodeClientState } from '../../../src/carriers/telnyx/telnyx-client-state.js';
import { telnyxEvent, telnyxFixture, telnyxReceipt, telnyxSigner } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { IdPrefix, newId } from '../../../src/platform/ids.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { FakeCallControl } from '../../support/fake-call-control.js';
import { FakeCarrier } from '../../support/fake-carrier.js';
import { telnyxRouter } from '../../support/telnyx-router.js';
import { type NodeRun } from '../../support/run-node.js';
import { partitionHolding } from '../../support/partitions.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';
import { runCliHere } from '../../support/run-cli.js';

// Each verify is a booted Node process; on a busy 2-core machine that takes a while.
const SLOW = 180_000;
const OUR_NUMBER = '+17735550002'; // the `to` of the Telnyx inbound fixture
const INVARIANTS = [
  'billing.statement_sums_to_ledger',
  'billing.usage_has_cause',
  'billing.usage_has_resource',
  'calls.answered_announced_once',
  'calls.answered_event_only_if_answered',
  'calls.answered_leg_was_live',
  'calls.end_announced_once',
  'calls.minutes_billed_once',
  'calls.one_dial_per_try',
  'entitlements.granted_once',
  'ingest.events_processed_by_deadline',
  'messaging.inbound_billed_once',
  'messaging.no_send_after_opt_out',
  'messaging.one_event_per_transition',
  'messaging.outbound_billed_once',
  'messaging.receipt_implies_terminal',
  'messaging.unsent_has_dispatch_job',
  'numbers.release_failing',
  'outbox.due_jobs_relayed_in_time',
  'outbox.relayed_jobs_redriven_in_time',
  'webhooks.parked_only_on_disabled_endpoints',
];
// The defaults the CLI runs with: OUTBOX_REDRIVE_AFTER_SECONDS=60, CARRIER_EVENT_RETRY_DEADLINE_SECONDS=3600.
const REDRIVE_SECONDS = 60;
const DEADLINE_SECONDS = 3600;

interface Report {
  ok: boolean;
  broken: number;
  invariants: { name: string; ok: boolean; count: number; examples: string[] }[];
}

/** Parses the WHOLE of stdout: exactly one JSON document or the test fails. */
function oneDocument(run: NodeRun): Report {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`stdout is not one JSON document:\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

/** The time part of the planted messages' and events' ids: their partition (migrations 0046, 0047). */
const T = newId(IdPrefix.Message).slice(4, 14);

describe('onceline verify: one read-only pass over what exactly-once means', () => {
  let db: TestDatabase;
  let carrier: FakeCarrier;
  let calls: FakeCallControl;
  let router: Awaited<ReturnType<typeof telnyxRouter>>;
  let receiver: WebhookReceiver;
  /** Rows of the real flow the plants below break and restore. */
  const flow = { accountId: '', outbound: '', inbound: '', endpoint: '', delivery: '', call: '' };
  const sql = (text: string, params: unknown[] = []) => db.pool.query(text, params);
  /** Plants usage rows (`values`: VALUES rows of id, account, kind, resource, quantity, unit price, amount) as a ledger from before causes: legacy, naming the resource only. */
  const plantUsage = (values: string, params: unknown[]) =>
    sql(
      `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       SELECT v.*, jsonb_build_object('resource', jsonb_build_object('type', 'unknown', 'id', v.resource_id), 'carrier_events', '[]'::jsonb, 'legacy', true,
                                      'price_rule', jsonb_build_object('quantity', v.quantity, 'unit_price_micros', v.unit_price_micros))
         FROM (VALUES ${values}) v (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros)`,
      params,
    );
  const verify = (...args: string[]) => runCliHere(['verify', ...args], { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL });

  /**
   * Runs the pass with a violation planted, and expects exactly `invariant` broken, by `examples`.
   * In process (the pass the CLI runs, without booting a Node process per plant); the CLI's own
   * output and exit codes are the first test's and the last plant's.
   */
  let checker: TestApp;
  async function expectOnlyBroken(invariant: string, count: number, examples: string[], { limit = 10 }: { limit?: number } = {}): Promise<void> {
    const report = await checker.app.get(VerifyService).run({ limit });
    expect(report.ok).toBe(false);
    expect(report.broken).toBe(1);
    expect(report.invariants.filter((i) => !i.ok)).toEqual([expect.objectContaining({ name: invariant, ok: false, count, examples })]);
  }

  /** Runs `body` with the usage row of `resourceId` deleted, then puts it back as it was. */
  async function withoutUsage(resourceId: string, body: () => Promise<void>): Promise<void> {
    const { rows } = await sql(`DELETE FROM usage_records WHERE resource_id = $1 RETURNING *`, [resourceId]);
    expect(rows).toHaveLength(1);
    try {
      await body();
    } finally {
      const u = rows[0];
      await sql(`INSERT INTO usage_records VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [u.id, u.account_id, u.kind, u.resource_id, u.quantity, u.unit_price_micros, u.amount_micros, u.created_at, u.cause]);
    }
  }

  /** Runs `body` with a copy of the flow call's `type` customer event planted, then removes it. */
  async function withCallEventTwice(type: string, body: () => Promise<void>): Promise<void> {
    await sql(`INSERT INTO outbound_events (id, account_id, type, event_version, payload) SELECT 'evt_${T}planted_copy', account_id, type, event_version, payload FROM outbound_events WHERE type = $2 AND payload->>'id' = $1`, [flow.call, type]);
    try {
      await body();
    } finally {
      await sql(`DELETE FROM outbound_events WHERE id = 'evt_${T}planted_copy'`);
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    carrier = await new FakeCarrier().start();
    // The call's dial goes to a Call Control fake, which answers it as Telnyx documents DialCall.
    calls = await new FakeCallControl().start();
    router = await telnyxRouter(calls, carrier);
    receiver = await startWebhookReceiver();
    const telnyx = telnyxSigner();
    // A real flow: one SMS out (sent, then a delivered receipt), one SMS in, each event delivered.
    const app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { ...carrier.env(), TELNYX_API_URL: `${router.url}/v2`, TELNYX_PUBLIC_KEY: telnyx.publicKey, DIAL_JOIN_TIMEOUT_SECONDS: '1' } });
    try {
      const deliver = (body: string) => fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: telnyx.headers(body), body }).then((r) => r.status);
      const customer = await ApiClient.forNewAccount(app);
      flow.accountId = customer.accountId;
      await customer.assignNumber(OUR_NUMBER, 'telnyx');
      const endpoint = await customer.post('/v2/webhook_endpoints', { url: `${receiver.url}/hooks` });
      expect(endpoint.status).toBe(201);
      flow.endpoint = endpoint.body.data.id;
      const { body } = await customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550009', text: 'verify me' });
      flow.outbound = body.data.id;
      const sent = await waitFor(() => customer.get(`/v2/messages/${flow.outbound}`), (r) => r.body.data.status === 'sent', { what: 'the message sent' });
      expect(await deliver(telnyxReceipt(sent.body.data.carrier_message_id, 'delivered'))).toBe(200);
      expect(await deliver(telnyxFixture('message.received.json', { id: randomUUID() }))).toBe(200);
      await waitFor(() => customer.get(`/v2/messages/${flow.outbound}`), (r) => r.body.data.status === 'delivered', { what: 'the message delivered' });
      await waitFor(() => db.count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`), (n) => n === 3, { what: 'sent, delivered and received delivered to the endpoint' });
      // One call through a ring plan: answered by target 0, 70 s, hung up by the caller (2 minutes).
      const numberId = (await customer.get('/v2/phone_numbers')).body.data[0].id;
      await customer.request('PATCH', `/v2/phone_numbers/${numberId}`, { voice: { ring_plan: { targets: [{ to: '+13125550077' }] } } });
      const session = randomUUID();
      const caller = { call_control_id: 'v3:verify-caller', call_session_id: session, from: '+13125550001', to: OUR_NUMBER };
      expect(await deliver(telnyxEvent('call.initiated', { ...caller, direction: 'incoming', client_state: null }))).toBe(200);
      flow.call = (await waitFor(() => sql(`SELECT id FROM calls WHERE carrier_call_id = $1`, [session]), (r) => r.rows.length === 1, { what: 'the call recorded' })).rows[0].id;
      const [dial] = await waitFor(() => Promise.resolve(calls.dials(flow.call)), (d) => d.length === 1, { what: 'target 0 dialed' });
      const leg = { call_control_id: dial.controlId, call_session_id: session, client_state: encodeClientState({ callId: flow.call, target: 0, attempt: 1 }), direction: 'outgoing' };
      const t0 = Date.now();
      expect(await deliver(telnyxEvent('call.answered', leg, { occurredAt: new Date(t0).toISOString() }))).toBe(200);
      await waitFor(() => sql(`SELECT status FROM calls WHERE id = $1`, [flow.call]), (r) => r.rows[0].status === 'in_progress', { what: 'the call answered' });
      expect(await deliver(telnyxEvent('call.hangup', { ...caller, hangup_cause: 'normal_clearing' }, { occurredAt: new Date(t0 + 70_000).toISOString() }))).toBe(200);
      await waitFor(() => sql(`SELECT status FROM calls WHERE id = $1`, [flow.call]), (r) => r.rows[0].status === 'completed', { what: 'the call completed' });
      await waitFor(() => db.count(`SELECT count(*) FROM outbox_jobs WHERE completed_at IS NULL AND failed_at IS NULL`), (n) => n === 0, { what: 'every job finished' });
      flow.inbound = (await sql(`SELECT id FROM messages WHERE direction = 'inbound'`)).rows[0].id;
      flow.delivery = (await sql(`SELECT d.id FROM webhook_deliveries d JOIN outbound_events e ON e.id = d.event_id WHERE e.type = 'message.delivered'`)).rows[0].id;
    } finally {
      // Nothing runs from here on: the plants below must stay as planted while verify reads them.
      await app.close();
    }
    // Reads only: no HTTP, no relay, no workers.
    checker = await startTestApp({ databaseUrl: db.url, http: false });
  }, SLOW);
  afterAll(async () => {
    await checker?.close();
    await receiver?.close();
    await router?.close();
    await Promise.all([carrier?.stop(), calls?.stop()]);
    await db?.drop();
  });

  it('after a real flow (send, receipt, inbound, customer webhooks) every invariant holds: exit 0', async () => {
    const [json, human] = await Promise.all([verify('--json'), verify()]);
    expect(json.code).toBe(0);
    const report = oneDocument(json);
    expect(report.ok).toBe(true);
    expect(report.broken).toBe(0);
    expect(report.invariants.map((i) => i.name)).toEqual(INVARIANTS);
    for (const invariant of report.invariants) expect(invariant).toEqual(expect.objectContaining({ ok: true, count: 0, examples: [] }));
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`all ${INVARIANTS.length} invariants hold`));
  }, SLOW);

  it('messaging.receipt_implies_terminal: a processed delivered receipt beside a message still sent (the stuck message of issue 10)', async () => {
    await sql(`UPDATE messages SET status = 'sent' WHERE id = $1`, [flow.outbound]);
    try {
      await expectOnlyBroken('messaging.receipt_implies_terminal', 1, [flow.outbound]);
    } finally {
      await sql(`UPDATE messages SET status = 'delivered' WHERE id = $1`, [flow.outbound]);
    }
  }, SLOW);

  it('messaging.unsent_has_dispatch_job: a queued message with no dispatch job left to run it (the stalled send of a 429 raced by a claim), and one whose job failed for good', async () => {
    await sql(
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier)
       VALUES ('msg_${T}planted_stalled', $1, 'outbound', $2, '+13125550009', 'x', 'queued', 1, 'GSM-7', 'telnyx'),
              ('msg_${T}planted_failed_job', $1, 'outbound', $2, '+13125550009', 'x', 'sending', 1, 'GSM-7', 'telnyx'),
              ('msg_${T}planted_waiting', $1, 'outbound', $2, '+13125550009', 'x', 'scheduled', 1, 'GSM-7', 'telnyx')`,
      [flow.accountId, OUR_NUMBER],
    );
    // A job that failed for good leaves its message with none; one still due tomorrow keeps it waiting, rightly.
    await sql(
      `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at, failed_at) VALUES
         ('dispatch-msg_${T}planted_failed_job', 'messaging', 'dispatch-message', '{"messageId": "msg_${T}planted_failed_job"}', now(), now()),
         ('dispatch-msg_${T}planted_waiting', 'messaging', 'dispatch-message', '{"messageId": "msg_${T}planted_waiting"}', now() + interval '1 day', NULL)`,
    );
    try {
      await expectOnlyBroken('messaging.unsent_has_dispatch_job', 2, [`msg_${T}planted_failed_job`, `msg_${T}planted_stalled`]);
    } finally {
      await sql(`DELETE FROM outbox_jobs WHERE job_id LIKE 'dispatch-msg_${T}planted_%'`);
      await sql(`DELETE FROM messages WHERE id LIKE 'msg_${T}planted_%'`);
    }
  }, SLOW);

  it('messaging.no_send_after_opt_out: the flow message taken for sending after its recipient opted out', async () => {
    const [m] = (await sql(`SELECT from_number, to_number FROM messages WHERE id = $1`, [flow.outbound])).rows;
    await sql(`INSERT INTO message_opt_outs (account_id, our_number, handset, opted_out, changed_by, changed_at) VALUES ($1, $2, $3, true, 'msg_planted_stop', '-infinity')`, [flow.accountId, m.from_number, m.to_number]);
    try {
      await expectOnlyBroken('messaging.no_send_after_opt_out', 1, [flow.outbound]);
    } finally {
      await sql(`DELETE FROM message_opt_outs WHERE changed_by = 'msg_planted_stop'`);
    }
  }, SLOW);

  it('messaging.outbound_billed_once: an accepted outbound message with no usage row, and a rejected one billed', async () => {
    // Never accepted by a carrier (rejected: no carrier id, no `sent` in its history), yet billed.
    await sql(
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, error_code)
       VALUES ('msg_${T}planted_rejected', $1, 'outbound', $2, '+13125550009', 'x', 'failed', 1, 'GSM-7', 'telnyx', '40300')`,
      [flow.accountId, OUR_NUMBER],
    );
    await plantUsage(`('use_planted_rejected', $1, 'sms_outbound_segments', 'msg_${T}planted_rejected', 1, 4000, 4000)`, [flow.accountId]);
    try {
      await withoutUsage(flow.outbound, () => expectOnlyBroken('messaging.outbound_billed_once', 2, [flow.outbound, `msg_${T}planted_rejected`].sort()));
    } finally {
      await sql(`DELETE FROM usage_records WHERE id = 'use_planted_rejected'`);
      await sql(`DELETE FROM messages WHERE id = 'msg_${T}planted_rejected'`);
    }
  }, SLOW);

  it('calls.minutes_billed_once: an answered, ended call with no call_minutes row', async () => {
    await withoutUsage(flow.call, () => expectOnlyBroken('calls.minutes_billed_once', 1, [flow.call]));
  }, SLOW);

  it('calls.end_announced_once: an ended call announced twice, and one still up announced as completed', async () => {
    await withCallEventTwice('call.completed', () => expectOnlyBroken('calls.end_announced_once', 1, [flow.call]));
  }, SLOW);

  it('calls.answered_leg_was_live: the winner is a leg whose hangup was recorded before its answer, a failed leg, a leg that ended before it answered, or no leg of the call', async () => {
    const { rows } = await sql(`SELECT l.* FROM call_legs l JOIN calls c ON c.answered_leg = l.id WHERE c.id = $1`, [flow.call]);
    expect(rows).toHaveLength(1);
    const leg = rows[0];
    // the clean call's winner answered and was live then
    expect(leg.answered_at).not.toBeNull();
    const answeredAt = new Date(leg.answered_at).getTime();
    const plants: [string, unknown[]][] = [
      // issue 24: its call.hangup came first, so its late answer recorded nothing on the leg
      [`UPDATE call_legs SET status = 'ended', answered_at = NULL, ended_at = $2 WHERE id = $1`, [leg.id, new Date(answeredAt - 1000)]],
      [`UPDATE call_legs SET status = 'failed', ended_at = $2 WHERE id = $1`, [leg.id, new Date(answeredAt + 1000)]],
      [`UPDATE call_legs SET status = 'ended', ended_at = $2 WHERE id = $1`, [leg.id, new Date(answeredAt - 1000)]],
      [`UPDATE calls SET answered_leg = 'leg_planted_elsewhere' WHERE id = $1`, [flow.call]],
    ];
    for (const [plant, params] of plants) {
      await sql(plant, params);
      try {
        await expectOnlyBroken('calls.answered_leg_was_live', 1, [flow.call]);
      } finally {
        await sql(`UPDATE call_legs SET status = $2, answered_at = $3, ended_at = $4 WHERE id = $1`, [leg.id, leg.status, leg.answered_at, leg.ended_at]);
        await sql(`UPDATE calls SET answered_leg = $2 WHERE id = $1`, [flow.call, leg.id]);
      }
    }
  }, 4 * SLOW);

  it('calls.answered_announced_once: a call announced answered a second time', async () => {
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'call.answered' AND payload->>'id' = $1`, [flow.call])).toBe(1);
    await withCallEventTwice('call.answered', () => expectOnlyBroken('calls.answered_announced_once', 1, [flow.call]));
  }, SLOW);

  it('calls.answered_event_only_if_answered: a call that ended missed after announcing call.answered (issue 24: the winner was written off)', async () => {
    await sql(
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, ended_at, duration_seconds, billable_minutes)
       SELECT 'call_planted_missed', account_id, direction, from_number, to_number, 'missed', carrier, 'planted-session', now(), 0, 0 FROM calls WHERE id = $1`,
      [flow.call],
    );
    await sql(
      `INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT 'evt_${T}planted_' || t, account_id, 'call.' || t, event_version, jsonb_set(payload, '{id}', '"call_planted_missed"') FROM outbound_events, unnest(ARRAY['answered', 'missed']) t
        WHERE type = 'call.completed' AND payload->>'id' = $1`,
      [flow.call],
    );
    try {
      await expectOnlyBroken('calls.answered_event_only_if_answered', 1, ['call_planted_missed']);
    } finally {
      await sql(`DELETE FROM outbound_events WHERE id IN ('evt_${T}planted_answered', 'evt_${T}planted_missed')`);
      await sql(`DELETE FROM calls WHERE id = 'call_planted_missed'`);
    }
  }, SLOW);

  it('calls.one_dial_per_try: a target dialed a third time', async () => {
    await sql(`INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status) VALUES ('leg_planted_3', $1, 0, 3, '+13125550077', 'dialing')`, [flow.call]);
    try {
      await expectOnlyBroken('calls.one_dial_per_try', 1, [flow.call]);
    } finally {
      await sql(`DELETE FROM call_legs WHERE id = 'leg_planted_3'`);
    }
  }, SLOW);

  it('messaging.inbound_billed_once: a received message with no usage row', async () => {
    await withoutUsage(flow.inbound, () => expectOnlyBroken('messaging.inbound_billed_once', 1, [flow.inbound]));
  }, SLOW);

  it('messaging.one_event_per_transition: a delivered transition announced twice', async () => {
    await sql(
      `INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT 'evt_${T}planted_twice', account_id, type, event_version, payload FROM outbound_events WHERE type = 'message.delivered' AND payload->>'id' = $1`,
      [flow.outbound],
    );
    try {
      await expectOnlyBroken('messaging.one_event_per_transition', 1, [flow.outbound]);
    } finally {
      await sql(`DELETE FROM outbound_events WHERE id = 'evt_${T}planted_twice'`);
    }
  }, SLOW);

  it('billing.usage_has_resource: usage rows billing nothing that exists; --limit caps the examples, not the count', async () => {
    await plantUsage(
      `('use_planted_1', $1, 'sms_outbound_segments', 'msg_never_existed', 1, 4000, 4000),
         ('use_planted_2', $1, 'sms_inbound_segments', $2, 1, 4000, 4000),
         ('use_planted_3', $1, 'call_minutes', 'call_not_yet', 2, 7000, 14000)`,
      [flow.accountId, flow.outbound], // an outbound message's id billed as inbound: no inbound message has it
    );
    try {
      await expectOnlyBroken('billing.usage_has_resource', 3, ['use_planted_1', 'use_planted_2'], { limit: 2 });
    } finally {
      await sql(`DELETE FROM usage_records WHERE id LIKE 'use_planted_%'`);
    }
  }, SLOW);

  it('billing.usage_has_cause: a call billed without the hangup that ended it, an inbound SMS without its delivery; a legacy row needs only its resource', async () => {
    const causeOf = async (resourceId: string) => (await sql(`SELECT id, cause FROM usage_records WHERE resource_id = $1`, [resourceId])).rows[0] as { id: string; cause: object };
    const [call, inbound] = [await causeOf(flow.call), await causeOf(flow.inbound)];
    await sql(`UPDATE usage_records SET cause = jsonb_set(cause, '{carrier_events}', '[]') WHERE id = ANY($1)`, [[call.id, inbound.id]]);
    try {
      await expectOnlyBroken('billing.usage_has_cause', 2, [call.id, inbound.id].sort());
      // marked legacy (recorded before causes were kept): the events are not known, and not asked for
      await sql(`UPDATE usage_records SET cause = jsonb_set(cause, '{legacy}', 'true') WHERE id = ANY($1)`, [[call.id, inbound.id]]);
      expect((await checker.app.get(VerifyService).run({ limit: 5 })).ok).toBe(true);
    } finally {
      for (const row of [call, inbound]) await sql(`UPDATE usage_records SET cause = $2 WHERE id = $1`, [row.id, row.cause]);
    }
  }, SLOW);

  it('entitlements.granted_once: an entitlement no delivery applied nor announced, and one announced twice', async () => {
    const entitlement = (id: string) =>
      sql(
        `INSERT INTO entitlements (id, account_id, invoice_id, type, quantity, period_start, period_end, fingerprint, provider, provider_event_id)
         VALUES ($1, $2, $1, 'sms_segments', 10, now(), now(), 'f', 'stripe', 'evt_planted')`,
        [id, flow.accountId],
      );
    await sql(`INSERT INTO billing_events (provider, provider_event_id, event_type, payload) VALUES ('stripe', 'evt_planted', 'invoice.paid', '{}')`);
    await entitlement('ent_planted_silent');
    await entitlement('ent_planted_twice');
    await sql(`INSERT INTO entitlement_outcomes (provider, provider_event_id, entitlement_id, outcome) VALUES ('stripe', 'evt_planted', 'ent_planted_twice', 'applied')`);
    await sql(
      `INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       VALUES ('evt_${T}planted_1', $1, 'entitlement.granted', 1, '{"id":"ent_planted_twice"}'), ('evt_${T}planted_2', $1, 'entitlement.granted', 1, '{"id":"ent_planted_twice"}')`,
      [flow.accountId],
    );
    try {
      await expectOnlyBroken('entitlements.granted_once', 2, ['ent_planted_silent', 'ent_planted_twice']);
    } finally {
      await sql(`DELETE FROM outbound_events WHERE id LIKE 'evt_${T}planted_%'`);
      await sql(`DELETE FROM entitlement_outcomes WHERE provider_event_id = 'evt_planted'`);
      await sql(`DELETE FROM entitlements WHERE id LIKE 'ent_planted_%'`);
      await sql(`DELETE FROM billing_events WHERE provider_event_id = 'evt_planted'`);
    }
  }, SLOW);

  it('ingest.events_processed_by_deadline: an event unprocessed past the deadline with no job; not one still retrying, nor a young one, nor one waiting for a handler', async () => {
    const insertEvent = (id: string, ageSeconds: number, error: string | null, unhandled = false) =>
      sql(
        `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, error, created_at, unhandled_since)
         VALUES ($1, 'telnyx', $1, 'message.finalized', 'message.status', '{}', '{"kind": "message.status"}', $2, now() - make_interval(secs => $3),
                 CASE WHEN $4 THEN now() - make_interval(secs => $3) END)`,
        [id, error, ageSeconds, unhandled],
      );
    // An hour old: yesterday's partition in the first hour of a day.
    await partitionHolding(db.pool, 'carrier_events', new Date(Date.now() - (DEADLINE_SECONDS + 120) * 1000));
    await insertEvent('cev_planted_late', DEADLINE_SECONDS + 60, 'retry deadline of 3600 s passed: no message carries it');
    await insertEvent('cev_planted_retrying', DEADLINE_SECONDS + 60, null);
    await insertEvent('cev_planted_young', DEADLINE_SECONDS - 600, null);
    await insertEvent('cev_planted_unhandled', DEADLINE_SECONDS + 60, null, true);
    await sql(`INSERT INTO outbox_jobs (job_id, queue, name, data) VALUES ('cev_planted_retrying-r9', 'carrier-events', 'process-carrier-event', '{"carrierEventId": "cev_planted_retrying"}')`);
    try {
      await expectOnlyBroken('ingest.events_processed_by_deadline', 1, ['cev_planted_late']);
    } finally {
      await sql(`DELETE FROM outbox_jobs WHERE job_id = 'cev_planted_retrying-r9'`);
      await sql(`DELETE FROM carrier_events WHERE id LIKE 'cev_planted_%'`);
    }
  }, SLOW);

  it('outbox.relayed_jobs_redriven_in_time: a relayed job with no outcome whose redrive check is two periods overdue; not one just due', async () => {
    await sql(
      `INSERT INTO outbox_jobs (job_id, queue, name, data, relayed_at, redrive_at) VALUES
         ('planted-stuck', 'system', 'probe', '{}', now() - interval '1 hour', now() - make_interval(secs => $1 * 2 + 10)),
         ('planted-due', 'system', 'probe', '{}', now() - interval '1 hour', now() - make_interval(secs => $1))`,
      [REDRIVE_SECONDS],
    );
    try {
      await expectOnlyBroken('outbox.relayed_jobs_redriven_in_time', 1, ['planted-stuck']);
    } finally {
      await sql(`DELETE FROM outbox_jobs WHERE job_id LIKE 'planted-%'`);
    }
  }, SLOW);

  it('outbox.due_jobs_relayed_in_time: a job due for two redrive periods and never relayed; not one due a moment ago', async () => {
    await sql(
      `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at) VALUES
         ('planted-unrelayed', 'system', 'probe', '{}', now() - make_interval(secs => $1 * 2 + 10)),
         ('planted-just-due', 'system', 'probe', '{}', now() - interval '5 seconds')`,
      [REDRIVE_SECONDS],
    );
    try {
      await expectOnlyBroken('outbox.due_jobs_relayed_in_time', 1, ['planted-unrelayed']);
    } finally {
      await sql(`DELETE FROM outbox_jobs WHERE job_id LIKE 'planted-%'`);
    }
  }, SLOW);

  it('webhooks.parked_only_on_disabled_endpoints: a delivery parked on an enabled endpoint; not one parked on a disabled endpoint', async () => {
    await sql(`UPDATE webhook_deliveries SET status = 'parked', parked_at = now() WHERE id = $1`, [flow.delivery]);
    await sql(
      `INSERT INTO webhook_endpoints (id, account_id, url, secret, enabled, disabled_at) VALUES ('we_planted_off', $1, 'http://127.0.0.1:9/off', 'whsec_x', false, now())`,
      [flow.accountId],
    );
    await sql(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, parked_at)
       SELECT 'dlv_planted_ok', event_id, 'we_planted_off', account_id, 'parked', now() FROM webhook_deliveries WHERE id = $1`,
      [flow.delivery],
    );
    try {
      // The human report names it too, with the same exit code.
      const [, human] = await Promise.all([expectOnlyBroken('webhooks.parked_only_on_disabled_endpoints', 1, [flow.delivery]), verify()]);
      expect(human.code).toBe(1);
      expect(human.stdout).toMatch(new RegExp(`BROKEN\\s+webhooks\\.parked_only_on_disabled_endpoints\\s+1\\s+e\\.g\\. ${flow.delivery}`));
      expect(human.stdout).toMatch(new RegExp(`1 of ${INVARIANTS.length} invariants broken`));
    } finally {
      await sql(`DELETE FROM webhook_deliveries WHERE id = 'dlv_planted_ok'`);
      await sql(`DELETE FROM webhook_endpoints WHERE id = 'we_planted_off'`);
      await sql(`UPDATE webhook_deliveries SET status = 'delivered', parked_at = NULL WHERE id = $1`, [flow.delivery]);
    }
  }, SLOW);

  describe('in process', () => {
    let app: TestApp;

    beforeAll(async () => {
      app = await startTestApp({ databaseUrl: db.url });
    }, SLOW);
    afterAll(async () => {
      await app?.close();
    });

    it('/metrics: onceline_invariants_broken per invariant, from a pass at most once a minute (a second scrape reads the first pass)', async () => {
      const scrape = () => fetch(`${app.url}/metrics`).then((r) => r.text());
      const gauge = (text: string, name: string) => Number(text.match(new RegExp(`^onceline_invariants_broken\\{invariant="${name.replace('.', '\\.')}"\\} (\\d+)$`, 'm'))?.[1]);
      await plantUsage(`('use_planted_m1', $1, 'call_minutes', 'call_not_yet_1', 1, 7000, 7000)`, [flow.accountId]);
      try {
        const first = await scrape();
        expect(gauge(first, 'billing.usage_has_resource')).toBe(1);
        for (const name of INVARIANTS.filter((n) => n !== 'billing.usage_has_resource')) expect(gauge(first, name)).toBe(0);
        expect(first).toMatch(/^onceline_invariants_checked_timestamp_seconds \d+(\.\d+)?$/m);

        await plantUsage(`('use_planted_m2', $1, 'call_minutes', 'call_not_yet_2', 1, 7000, 7000)`, [flow.accountId]);
        const second = await scrape();
        expect(gauge(second, 'billing.usage_has_resource')).toBe(1);
      } finally {
        await sql(`DELETE FROM usage_records WHERE id LIKE 'use_planted_m%'`);
      }
    });

    it('an invariant name is registered once', () => {
      const registry = new Invariants();
      const none = async () => ({ count: 0, examples: [] });
      registry.register('test.once', 'registered once', none);
      expect(() => registry.register('test.once', 'again', none)).toThrow(/test\.once registered twice/);
      expect(() => registry.register('NoModule', 'bad name', none)).toThrow(/not <module>\.<snake_case>/);
    });

    it('the pass is READ ONLY: a check that writes fails it', async () => {
      const registry = new Invariants();
      registry.register('test.writes', 'tries to write', async (snapshot) => {
        await snapshot.query(`INSERT INTO accounts (id, name) VALUES ('acct_written_by_verify', 'x')`);
        return { count: 0, examples: [] };
      });
      await expect(new VerifyService(registry, app.app.get(DataSource)).run({ limit: 1 })).rejects.toThrow(/test\.writes could not be checked: .*read-only transaction/);
      expect(await db.count(`SELECT count(*) FROM accounts WHERE id = 'acct_written_by_verify'`)).toBe(0);
    });

    it('every check of a pass reads one snapshot: a commit between two checks is seen by neither', async () => {
      const registry = new Invariants();
      const countAccounts = async (snapshot: { query(q: string): Promise<{ n: number }[]> }) => ({ count: (await snapshot.query(`SELECT count(*)::int AS n FROM accounts`))[0].n, examples: [] });
      registry.register('test.a_before', 'counts accounts, then commits one more elsewhere', async (snapshot) => {
        const seen = await countAccounts(snapshot);
        await sql(`INSERT INTO accounts (id, name) VALUES ('acct_between_checks', 'x')`);
        return seen;
      });
      registry.register('test.b_after', 'counts accounts again', countAccounts);
      try {
        const report = await new VerifyService(registry, app.app.get(DataSource)).run({ limit: 1 });
        const [before, after] = report.invariants;
        expect(after.count).toBe(before.count);
        expect(await db.count(`SELECT count(*) FROM accounts`)).toBe(before.count + 1);
      } finally {
        await sql(`DELETE FROM accounts WHERE id = 'acct_between_checks'`);
      }
    });
  });
});
