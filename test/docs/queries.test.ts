import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { AccountsService } from '../../src/modules/accounts/accounts.service.js';
import { Plans } from '../../src/modules/entitlements/plans.js';
import { ApiClient } from '../support/api-client.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { telnyxInboundSms, telnyxReceipt, telnyxSigner } from '../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { FakeCarrier } from '../support/fake-carrier.js';
import { deliverStripe, invoicePaid, TEST_STRIPE_SECRET } from '../support/stripe-signing.js';
import { VoicePipeline } from '../support/voice-pipeline.js';
import { waitFor } from '../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * docs/queries/*.sql: the hot statements exactly as PostgreSQL receives them, captured at the
 * driver while the real application runs a fixed scenario. A change that alters one fails here
 * until `npm run docs:queries` rewrites the file, so the reviewer reads the new SQL in the diff.
 */
const DIR = path.resolve('docs/queries');
const UPDATE = process.env.UPDATE_QUERIES === '1';

interface Query {
  file: string;
  title: string;
  /** Where the statement is written (one search finds it). */
  source: string;
  /** Picks the statement out of everything the scenario sent. */
  pick: RegExp;
}

const QUERIES: Query[] = [
  { file: 'carrier-event-insert.sql', title: 'A carrier webhook stored once (no twin in any partition, under the key lock) with its processing job', source: 'src/modules/ingest/carrier-event-writer.ts', pick: /^WITH inserted AS \(INSERT INTO carrier_events/ },
  { file: 'carrier-event-by-id.sql', title: "A call's carrier event read by id under its row lock: the partition key named from the id (one partition)", source: 'src/modules/ingest/carrier-event-processor.ts (lockEvent)', pick: /FROM carrier_events e WHERE e\.id = \$1 AND e\.created_at BETWEEN onceline_id_window_start\(\$1\)/ },
  { file: 'inbound-sms.sql', title: 'An inbound SMS: consume the event, store the message, bill it, opt-out keywords, message.received and its deliveries, in one statement', source: 'src/modules/messaging/messaging-carrier-events.ts (receive)', pick: /msg_received AS \(INSERT INTO messages/ },
  { file: 'outbound-accept.sql', title: 'POST /v2/messages: the message accepted unless the handset opted out', source: 'src/modules/messaging/messages.service.ts (insertOutbound)', pick: /^INSERT INTO messages .*\n\s+SELECT .* WHERE NOT EXISTS \(SELECT FROM message_opt_outs/ },
  { file: 'dispatch-claim.sql', title: 'The dispatch claims a queued message and its send slot on its number (pacing), or fails it when the handset opted out since', source: 'src/modules/messaging/dispatch-claims.ts (claimStatement)', pick: /^WITH locked AS \(SELECT m.id AS locked_id, m.status AS previous, m.claim_token/ },
  { file: 'receipt.sql', title: 'A delivery receipt applied to its message (status only forward), history, customer event, in one statement', source: 'src/modules/messaging/messaging-carrier-events.ts (applyReceipt)', pick: /rcpt_found AS \(SELECT/ },
  { file: 'delivery-attempt.sql', title: 'A customer webhook delivery attempt recorded (the attempt claims its delivery)', source: 'src/modules/webhooks/attempt-records.ts', pick: /INSERT INTO webhook_delivery_attempts/ },
  { file: 'ring-cursor-claim.sql', title: "Leg hangups decided in sets: each leg ended once, each call's ring plan moved by compare-and-set from the plan read (ring_plan = expected), the next leg and its dial once", source: 'src/modules/calls/call-event-sets.ts (legHangups), call-transitions.ts (handOffsCte; claimRingTurn in a transaction)', pick: /calls_ring_turned AS \(UPDATE calls c SET ring_plan/ },
  { file: 'call-start.sql', title: "New calls started in sets: each call once per carrier session (call_twin), started only on the number's settings as read before (the route compared), its first leg and dial, call.initiated and the timeline, in one statement", source: 'src/modules/calls/call-starts-in-sets.ts (callStarts)', pick: /calls_started AS \(INSERT INTO calls/ },
  { file: 'call-hangup.sql', title: 'A call ends once: status, duration, billable minutes', source: 'src/modules/calls/call-transitions.ts (end, endSetSql)', pick: /^UPDATE calls c SET\s+status = CASE/ },
  { file: 'call-end-in-sets.sql', title: "Answered calls' ends decided in sets: each call ended once (ended_at IS NULL), and for the calls it ended their legs, minutes, call.completed, hangups and transcript; a repeat a duplicate", source: 'src/modules/calls/call-ends-in-sets.ts (ends), call-transitions.ts (endSetSql)', pick: /calls_ended AS \(UPDATE calls c SET/ },
  { file: 'entitlement-grant.sql', title: 'A paid invoice grants each bundle once', source: 'src/modules/entitlements/invoice-grants.ts (claim)', pick: /INSERT INTO entitlements/ },
];

/** Every SQL text this process sends to PostgreSQL while `run` runs. */
async function captured(run: () => Promise<void>): Promise<string[]> {
  const texts: string[] = [];
  const prototype = pg.Client.prototype as unknown as { query: (config: unknown, ...rest: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
    if (text) texts.push(text);
    return original.call(this, config, ...rest);
  };
  try {
    await run();
  } finally {
    prototype.query = original;
  }
  return texts;
}

function render(query: Query, sql: string): string {
  return `-- ${query.title}\n-- Written in ${query.source}; captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries\n${sql.trim()};\n`;
}

describe('docs/queries: the hot statements as reviewed text', () => {
  const texts: string[] = [];
  let db: TestDatabase;
  let app: TestApp;
  let carrier: FakeCarrier;
  let receiver: WebhookReceiver;
  let voice: VoicePipeline;

  beforeAll(async () => {
    db = await createTestDatabase();
    carrier = await new FakeCarrier().start();
    receiver = await startWebhookReceiver();
    const telnyx = telnyxSigner();
    app = await startTestApp({
      databaseUrl: db.url,
      relay: true,
      worker: true,
      env: { ...carrier.env(), TELNYX_PUBLIC_KEY: telnyx.publicKey, STRIPE_WEBHOOK_SECRET: TEST_STRIPE_SECRET },
    });
    const created = await app.app.get(AccountsService).createAccount('Queries Ltd', 'cus_queries');
    const customer = new ApiClient(app.url, created.account.id, created.api_key, app);
    await customer.assignNumber('+15550009001', 'telnyx');
    expect((await customer.post('/v2/webhook_endpoints', { url: `${receiver.url}/hooks` })).status).toBe(201);
    await app.app.get(Plans).upsert('sms_1000', 'sms_segments', 1000);
    const deliverTelnyx = async (body: string) => (await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: telnyx.headers(body), body })).status;

    texts.push(...(await captured(async () => {
      expect(await deliverTelnyx(telnyxInboundSms('+15550009001', 'hello').body)).toBe(200);
      await receiver.waitForRequests(1);
      const { body } = await customer.post('/v2/messages', { from: '+15550009001', to: '+15550009002', text: 'hi' });
      const sent = await waitFor(() => customer.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'sent', { what: 'the message sent' });
      expect(await deliverTelnyx(telnyxReceipt(sent.body.data.carrier_message_id, 'delivered'))).toBe(200);
      await waitFor(() => customer.get(`/v2/messages/${body.data.id}`), (r) => r.body.data.status === 'delivered', { what: 'the message delivered' });
      expect((await deliverStripe(app.url, invoicePaid({ invoiceId: 'in_queries', customer: 'cus_queries', lines: [{ lookupKey: 'sms_1000' }] }))).status).toBe(200);
    })));

    voice = await VoicePipeline.start();
    await voice.number('+15550009101', { ring_plan: { targets: [{ to: '+15550009102' }, { to: '+15550009103' }], fallback: { action: 'hangup' } } });
    texts.push(...(await captured(async () => {
      const call = await voice.incoming('+15550009100', '+15550009101');
      const callId = await voice.callId(call);
      const first = await voice.dial(callId);
      expect(await voice.legEvent(call, first, 'call.hangup', { hangup_cause: 'timeout', sip_hangup_cause: '487' })).toBe(200);
      await voice.dial(callId, 2);
      expect(await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(200);
      await voice.settled();
      // A call answered, then ended by its caller: decided in sets.
      const answered = await voice.incoming('+15550009100', '+15550009101');
      const answeredId = await voice.callId(answered);
      const leg = await voice.dial(answeredId);
      expect(await voice.legEvent(answered, leg, 'call.answered')).toBe(200);
      await voice.callUntil(answeredId, (c) => c.status === 'in_progress', 'the call answered');
      expect(await voice.callerEvent(answered, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(200);
      await voice.callUntil(answeredId, (c) => c.status === 'completed', 'the call completed');
      await voice.settled();
    })));
  }, 120_000);

  afterAll(async () => {
    await voice?.stop();
    await app?.close();
    await receiver?.close();
    await carrier?.stop();
    await db?.drop();
  });

  it.each(QUERIES.map((q) => [q.file, q] as const))('%s matches the statement the code sends', (_file, query) => {
    const sql = texts.find((text) => query.pick.test(text));
    expect(sql).toBeDefined();
    const rendered = render(query, sql!);
    const target = path.join(DIR, query.file);
    if (UPDATE) {
      mkdirSync(DIR, { recursive: true });
      writeFileSync(target, rendered);
    }
    const written = existsSync(target) ? readFileSync(target, 'utf8') : '';
    // A difference means the code's SQL changed: run `npm run docs:queries` and review the diff.
    expect(written).toBe(rendered);
  });
});
