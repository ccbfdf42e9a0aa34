// `npm run demo` (against a running `npm start`): one account, a Telnyx, a Twilio and a Vonage number, a local
// webhook receiver, a prepaid SMS bundle granted by a signed Stripe invoice.paid (sent twice), SMS out
// and in through the carrier sandbox with chaos on, calls through a ring plan, then a table of counts and
// what is left of the bundle. Then `onceline verify` over the whole database. Exits 1 when a count is not what exactly-once
// promises or verify finds an invariant broken, naming what. It counts only its own account's
// records and the sandbox's log lines of its own calls, so it can run again and again on one app
// (one at a time: the sandbox's counters are shared). Settings: PORT, SANDBOX_PORT,
// DEMO_MESSAGES (per batch, default 10), DEMO_INBOUND (default 10), DEMO_CALLS (default 5), DEMO_TIMEOUT_SECONDS (default 180).
import './load-env.mjs'; // first: .env under the environment, as the app and the CLI read it
import { spawnSync } from 'node:child_process';
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { ROOT } from './services.mjs';
import { runCallsDemo, runTwilioCallsDemo } from './demo-calls.mjs';
import { signedInvoicePaid } from './stripe-test-event.mjs';

const env = process.env;
const API = `http://127.0.0.1:${env.PORT || '3000'}`;
const SANDBOX = `http://127.0.0.1:${env.SANDBOX_PORT || '3100'}`;
const PER_BATCH = Number(env.DEMO_MESSAGES || 10);
const INBOUND = Number(env.DEMO_INBOUND || 10);
const CALLS = Number(env.DEMO_CALLS || 5);
const DEADLINE = Date.now() + Number(env.DEMO_TIMEOUT_SECONDS || 180) * 1000;
/**
 * Batch A: every webhook three times (one copy re-signed under a new event id), random delays, and
 * a delivery_failed receipt one second after each delivered one. Batch B: a quarter of the send-API
 * calls fail (500, 503, or accepted but never answered: the Idempotency-Key retry makes that safe),
 * receipts arrive before the send answer, twice each (one re-signed), in a random order.
 */
const BATCHES = [
  { name: 'A', chaos: 'duplicate=3,resign,contradict,delay_ms=100' },
  { name: 'B', chaos: 'early_receipt,duplicate=2,resign,reorder,fail_rate=0.25' },
];
const INBOUND_CHAOS = 'duplicate=3,resign,delay_ms=100';
/** Messages take turns over the carriers, in and out. */
const CARRIERS = ['telnyx', 'twilio', 'vonage'];
const carrierOf = (i) => CARRIERS[i % CARRIERS.length];
/** The prepaid bundle the demo buys: one unit of this plan, granted by a paid invoice. */
const BUNDLE = { lookupKey: 'demo_sms_bundle', type: 'sms_segments', quantity: 100 };

const say = (line) => process.stderr.write(`[demo] ${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function call(base, method, path, { body, raw, headers = {}, key } = {}) {
  const sent = raw ?? (body === undefined ? undefined : JSON.stringify(body));
  const res = await fetchRetryingReads(`${base}${path}`, {
    method,
    headers: { ...(sent !== undefined && { 'content-type': 'application/json' }), ...(key && { authorization: `Bearer ${key}` }), ...headers },
    body: sent,
    signal: AbortSignal.timeout(15000),
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = { raw: text };
  }
  if (!res.ok) throw new Error(`${method} ${base}${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return json;
}

/**
 * fetch, with a GET tried again (up to 3 times) when the connection failed: on a busy machine a
 * kept-alive socket the server has just closed fails the next request that reuses it. Writes are
 * not repeated. A failure names the request and the network error.
 */
async function fetchRetryingReads(url, init = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, init);
    } catch (err) {
      const reason = `${init.method ?? 'GET'} ${url}: ${err.message}${err.cause?.code ? ` (${err.cause.code})` : ''}`;
      if ((init.method ?? 'GET') !== 'GET' || attempt >= 3 || err.name === 'TimeoutError') throw new Error(reason);
      say(`${reason}; trying again`);
    }
  }
}

async function reachable() {
  const problems = [];
  for (const [what, url] of [['the API', `${API}/health/ready`], ['the sandbox', `${SANDBOX}/sandbox/health`]]) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
      if (res.status !== 200) problems.push(`${what} at ${url} answered ${res.status}`);
    } catch {
      problems.push(`${what} does not answer at ${url}`);
    }
  }
  return problems;
}

/** Standard Webhooks verification: the `standardwebhooks` package when installed, else the same HMAC by hand. */
async function makeVerifier(secret) {
  try {
    const { Webhook } = await import('standardwebhooks');
    const webhook = new Webhook(secret);
    return { by: 'standardwebhooks', verify: (body, headers) => webhook.verify(body, headers) };
  } catch {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    return {
      by: 'node:crypto HMAC-SHA256',
      verify(body, headers) {
        const expected = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest();
        const ok = (headers['webhook-signature'] ?? '').split(' ').some((sig) => {
          const given = Buffer.from(sig.replace(/^v1,/, ''), 'base64');
          return sig.startsWith('v1,') && given.length === expected.length && timingSafeEqual(given, expected);
        });
        if (!ok) throw new Error('signature does not verify');
      },
    };
  }
}

/** A customer's webhook endpoint on 127.0.0.1: verifies every delivery, keeps one entry per webhook-id. */
async function startReceiver() {
  const state = { requests: 0, invalid: 0, events: new Map(), verifier: undefined };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      state.requests++;
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        state.verifier.verify(body, req.headers);
        const event = JSON.parse(body);
        if (!state.events.has(req.headers['webhook-id'])) state.events.set(req.headers['webhook-id'], event);
        res.writeHead(200).end('ok');
      } catch (err) {
        state.invalid++;
        say(`receiver: refused a delivery: ${err.message}`);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { state, url: `http://127.0.0.1:${server.address().port}/onceline-demo`, close: () => new Promise((r) => server.close(r)) };
}

const randomNumber = () => `+1555${String(randomInt(0, 10_000_000)).padStart(7, '0')}`;

/**
 * One number per carrier, as a user gets one: search (GET /v2/available_phone_numbers), order
 * (POST /v2/phone_number_orders) and wait until the order succeeded (Telnyx completes it
 * asynchronously with number_order.complete).
 */
async function buyNumbers(api) {
  const numbers = {};
  for (const carrier of CARRIERS) {
    const found = await api('GET', `/v2/available_phone_numbers?carrier=${carrier}&features=sms,voice&limit=5`);
    const phoneNumber = found.data[0].phone_number;
    const order = await api('POST', '/v2/phone_number_orders', { carrier, phone_numbers: [phoneNumber] });
    let settled;
    await until(`the ${carrier} order of ${phoneNumber}`, async () => (settled = await api('GET', `/v2/phone_number_orders/${order.data.id}`)).data.status !== 'pending');
    if (settled.data.status !== 'success') throw new Error(`the ${carrier} order of ${phoneNumber} failed: ${settled.data.error}`);
    numbers[carrier] = phoneNumber;
  }
  return numbers;
}

/** Counter deltas between two /sandbox/stats snapshots (other fields kept as they are now). */
function sub(after, before) {
  if (typeof after === 'number') return after - (before ?? 0);
  if (after === null || typeof after !== 'object') return after;
  const out = {};
  for (const k of Object.keys(after)) out[k] = sub(after[k], before?.[k]);
  return out;
}

async function main() {
  const problems = await reachable();
  if (problems.length) {
    say(`${problems.join('; ')}. Start everything first with \`npm start\` (another terminal), then run \`npm run demo\` again.`);
    process.exit(1);
  }

  // This run's own calls and log lines: those that ended from here on.
  const since = new Date().toISOString();
  const billingCustomer = `cus_demo_${Date.now().toString(36)}${randomInt(1000, 9999)}`;
  const { account, api_key: key } = cli('accounts:create', '--name', `demo ${new Date().toISOString()}`, '--billing-customer', billingCustomer);
  say(`account ${account.id} (billing customer ${billingCustomer})`);
  const api = (method, path, body) => call(API, method, path, { body, key });

  const numbers = await buyNumbers(api);
  const bought = (await call(SANDBOX, 'GET', '/sandbox/numbers')).stats;
  say(`numbers bought from the sandbox: ${CARRIERS.map((c) => `${numbers[c]} (${c})`).join(', ')}; sandbox bought ${bought.bought}, bought twice ${bought.bought_twice} (must be 0)`);
  if (bought.bought_twice !== 0) throw new Error('the sandbox sold a number twice');

  const receiver = await startReceiver();
  const endpoint = await api('POST', '/v2/webhook_endpoints', { url: receiver.url, description: 'npm run demo' });
  receiver.state.verifier = await makeVerifier(endpoint.data.secret);
  say(`webhook receiver ${receiver.url} (endpoint ${endpoint.data.id}), verified with ${receiver.state.verifier.by}`);
  const bundle = await buyBundle(billingCustomer);

  const previousChaos = (await call(SANDBOX, 'GET', '/sandbox/chaos')).chaos;
  const setChaos = (chaos) => call(SANDBOX, 'POST', '/sandbox/chaos', { body: { chaos } });
  const statsBefore = await call(SANDBOX, 'GET', '/sandbox/stats');
  const outbound = [];
  try {
    for (const batch of BATCHES) {
      await setChaos(batch.chaos);
      say(`batch ${batch.name}: ${PER_BATCH} SMS out with chaos ${batch.chaos}`);
      const ids = [];
      for (let i = 0; i < PER_BATCH; i++) {
        const carrier = carrierOf(i);
        const sent = await api('POST', '/v2/messages', { from: numbers[carrier], to: randomNumber(), text: `demo ${batch.name}${i} via ${carrier}` });
        ids.push(sent.data.id);
      }
      outbound.push(...ids);
      // Chaos applies when the sandbox receives a send: wait until this batch reached it before changing it.
      await until(`batch ${batch.name} handed to the carriers`, async () => {
        const { data } = await api('GET', '/v2/messages?direction=outbound&page[size]=250');
        return data.filter((m) => ids.includes(m.id) && m.carrier_message_id).length === ids.length;
      });
    }
    await setChaos(INBOUND_CHAOS);
    say(`${INBOUND} SMS in with chaos ${INBOUND_CHAOS}`);
    for (let i = 0; i < INBOUND; i++) {
      const carrier = carrierOf(i);
      await call(SANDBOX, 'POST', '/sandbox/inbound', { body: { from: randomNumber(), to: numbers[carrier], text: `hello ${i} via ${carrier}`, carrier } });
    }
  } finally {
    await setChaos(previousChaos).catch(() => undefined);
  }

  const N = outbound.length;
  const expectedEvents = { 'message.sent': N, 'message.delivered': N, 'message.failed': 0, 'message.received': INBOUND, 'entitlement.granted': 1 };
  const expectedTotal = Object.values(expectedEvents).reduce((a, b) => a + b, 0);
  const observe = async () => {
    const [out, inbound, usage, sandbox, balances] = await Promise.all([
      api('GET', '/v2/messages?direction=outbound&page[size]=250'),
      api('GET', '/v2/messages?direction=inbound&page[size]=250'),
      api('GET', '/v2/usage'),
      call(SANDBOX, 'GET', '/sandbox/stats'),
      api('GET', '/v2/balances'),
    ]);
    const byType = {};
    for (const e of receiver.state.events.values()) byType[e.type] = (byType[e.type] ?? 0) + 1;
    const balance = balances.data.find((b) => b.type === BUNDLE.type) ?? { granted: 0, used: 0, remaining: 0 };
    return { out: out.data, inbound: inbound.data, usage: usage.data, sandbox, byType, balance };
  };
  const complete = (o) =>
    o.out.filter((m) => m.status === 'delivered').length === N && o.inbound.length === INBOUND && o.sandbox.webhooks.pending === 0 &&
    receiver.state.events.size >= expectedTotal;
  say(`waiting for ${N} deliveries, ${INBOUND} inbound messages and ${expectedTotal} customer events (deadline ${Math.round((DEADLINE - Date.now()) / 1000)} s)`);
  await until('everything to settle', async () => complete(await observe()));
  // Anything doubled would show up late: look again after the latest contradiction could have landed.
  await sleep(3000);
  const o = await observe();

  const s = sub(o.sandbox, statsBefore);
  const w = s.webhooks;
  const changed = N + INBOUND; // each delivered receipt and each inbound SMS changed exactly one thing
  const usageOut = o.usage.sms_outbound_segments;
  const usageIn = o.usage.sms_inbound_segments;
  const perMessage = (type, ids) => ids.every((id) => [...receiver.state.events.values()].filter((e) => e.type === type && e.data.id === id).length === 1);
  const rows = [
    ['carrier send-API calls (incl. injected failures)', '', s.sends.requests],
    ['  failures injected: 500 / 503 / unanswered', '', `${s.sends.failed['500']} / ${s.sends.failed['503']} / ${s.sends.failed.timeout}`],
    ['  same Idempotency-Key (Vonage: client_ref) replayed', '', s.sends.replayed],
    ['  messages the carriers created', N, s.sends.accepted],
    ['carrier webhooks delivered (duplicates included)', '', w.deliveries],
    ['  extra copies / of which re-signed (new event id)', '', `${w.duplicates} / ${w.resigned}`],
    ['  contradicting delivery_failed receipts', '', w.contradictions],
    ['  answered "duplicate" at ingest (same event id)', '', w.answered.duplicate],
    ['  refused by the app after retries', 0, w.failed],
    ['messages out, delivered', N, o.out.filter((m) => m.status === 'delivered').length],
    ['messages in, received', INBOUND, o.inbound.filter((m) => m.status === 'received').length],
    ...CARRIERS.map((carrier) => [
      `  via ${carrier}: out delivered / in received`,
      `${BATCHES.length * countTurns(PER_BATCH, carrier)} / ${countTurns(INBOUND, carrier)}`,
      `${o.out.filter((m) => m.carrier === carrier && m.status === 'delivered').length} / ${o.inbound.filter((m) => m.carrier === carrier && m.status === 'received').length}`,
    ]),
    ['customer events (distinct webhook-id, verified)', expectedTotal, receiver.state.events.size],
    ...Object.entries(expectedEvents).map(([type, n]) => [`  ${type}`, n, o.byType[type] ?? 0]),
    ['  deliveries refused by the receiver (bad signature)', 0, receiver.state.invalid],
    ['usage billed: outbound / inbound segments', `${N} / ${INBOUND}`, `${usageOut} / ${usageIn}`],
    ['usage billed: amount', '', `${(o.usage.amount_micros / 1e6).toFixed(6)} ${o.usage.currency}`],
    ['prepaid bundle: invoice.paid / re-sent, new event id', 'applied / already_applied', `${bundle.first} / ${bundle.resent}`],
    ['  sms_segments granted / used / remaining', `${BUNDLE.quantity} / ${N + INBOUND} / ${Math.max(0, BUNDLE.quantity - N - INBOUND)}`, `${o.balance.granted} / ${o.balance.used} / ${o.balance.remaining}`],
    ['duplicates absorbed (webhooks that changed nothing)', '', w.deliveries - changed],
  ];
  /** [what, held]: each named, so a failure says which. */
  const checks = [
    ['the carriers created each message once', s.sends.accepted === N],
    ['no carrier webhook refused by the app', w.failed === 0],
    ['every message out delivered', o.out.length === N && o.out.every((m) => m.status === 'delivered')],
    ['every message in received', o.inbound.length === INBOUND && o.inbound.every((m) => m.status === 'received')],
    ['one customer event per fact', receiver.state.events.size === expectedTotal],
    ['customer events by type', Object.entries(expectedEvents).every(([type, n]) => (o.byType[type] ?? 0) === n)],
    ['every delivery verified by the receiver', receiver.state.invalid === 0],
    ['one message.sent and one message.delivered per message out', perMessage('message.delivered', outbound) && perMessage('message.sent', outbound)],
    ['one message.received per message in', perMessage('message.received', o.inbound.map((m) => m.id))],
    ['SMS usage billed once per message', usageOut === N && usageIn === INBOUND],
    ['the bundle granted once', bundle.first === 'applied' && bundle.resent === 'already_applied'],
  ];
  const callCtx = (number) => ({
    api, sandbox: (method, path, body) => call(SANDBOX, method, path, { body }), sandboxUrl: SANDBOX, say, until, randomNumber, number,
    receiverEvents: () => receiver.state.events, sub, env, accountId: account.id, since, fetch: fetchRetryingReads,
  });
  const voice = await runCallsDemo(callCtx(numbers.telnyx), CALLS);
  const twilioVoice = await runTwilioCallsDemo(callCtx(numbers.twilio), CALLS, numbers.telnyx);
  rows.push(...voice.rows, ...twilioVoice.rows);
  checks.push(...voice.checks, ...twilioVoice.checks);
  await receiver.close();
  printTable(rows, [...BATCHES.map((b) => `batch ${b.name}: ${b.chaos}`), `inbound: ${INBOUND_CHAOS}`, voice.chaos, twilioVoice.chaos]);
  for (const finding of new Set([...voice.findings, ...twilioVoice.findings])) say(finding);
  const verified = verifyInvariants();
  const bad = [
    ...rows.filter(([, expected, counted]) => expected !== '' && String(expected) !== String(counted)).map(([what, expected, counted]) => `${what.trim()} (expected ${expected}, counted ${counted})`),
    ...checks.filter(([, ok]) => !ok).map(([what]) => what),
  ];
  if (bad.length) {
    say(`WRONG: ${[...new Set(bad)].join('; ')}`);
    process.exit(1);
  }
  if (!verified) {
    say('WRONG: onceline verify found an invariant broken (see above)');
    process.exit(1);
  }
  say('every count is right: each carrier fact changed one thing once, however often it was told');
}

/** How many of `n` messages taking turns over CARRIERS go through `carrier`. */
function countTurns(n, carrier) {
  return Array.from({ length: n }, (_, i) => carrierOf(i)).filter((c) => c === carrier).length;
}

/** An admin command's --json document (exits the demo when it fails). */
function cli(...args) {
  const run = spawnSync(process.execPath, ['dist/cli.js', ...args, '--json'], { cwd: ROOT, env, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${args[0]} failed: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout);
}

/**
 * A plan (lookup_key → 100 SMS segments), then the account's invoice for it paid: Stripe's
 * invoice.paid, signed with STRIPE_WEBHOOK_SECRET (the development one by default) by the
 * official package, posted twice, the second time under a new event id as a re-sent notification
 * would be. The bundle is granted once; the SMS below draw it down.
 */
async function buyBundle(customer) {
  cli('plans:upsert', '--lookup-key', BUNDLE.lookupKey, '--type', BUNDLE.type, '--quantity', String(BUNDLE.quantity));
  const invoiceId = `in_demo_${Date.now().toString(36)}`;
  const post = async (eventId) => {
    const { payload, signature } = signedInvoicePaid({ customer, lookupKey: BUNDLE.lookupKey, invoiceId, eventId });
    const res = await call(API, 'POST', '/webhooks/billing/stripe', { raw: payload, headers: { 'stripe-signature': signature } });
    return res.outcome;
  };
  const bundle = { first: await post(`evt_demo_${randomInt(1e9)}a`), resent: await post(`evt_demo_${randomInt(1e9)}b`) };
  say(`prepaid bundle: ${BUNDLE.quantity} ${BUNDLE.type} (invoice ${invoiceId}): ${bundle.first}, re-sent: ${bundle.resent}`);
  return bundle;
}

/** The same promise checked where it runs: `onceline verify`, one read-only pass over the whole database. */
function verifyInvariants() {
  const run = spawnSync(process.execPath, ['dist/cli.js', 'verify'], { cwd: ROOT, env, encoding: 'utf8' });
  process.stdout.write(`onceline verify (every account in the database, not only this demo's):\n${run.stdout}\n`);
  if (run.stderr) process.stderr.write(run.stderr);
  return run.status === 0;
}

async function until(what, probe) {
  while (Date.now() < DEADLINE) {
    try {
      if (await probe()) return;
    } catch (err) {
      say(`still waiting for ${what}: ${err.message}`);
    }
    await sleep(1000);
  }
  say(`gave up waiting for ${what} (DEMO_TIMEOUT_SECONDS)`);
  throw new Error(`timed out waiting for ${what}`);
}

function printTable(rows, chaosLines) {
  const w0 = Math.max(...rows.map(([a]) => a.length));
  const w1 = Math.max('expected'.length, ...rows.map(([, b]) => String(b).length));
  const lines = [
    '',
    `Onceline demo: ${PER_BATCH * BATCHES.length} SMS out, ${INBOUND} SMS in, ${CALLS} calls through a ring plan, via the carrier sandbox with chaos on`,
    ...chaosLines.map((l) => `  chaos ${l}`),
    '',
    `  ${'what'.padEnd(w0)}  ${'expected'.padStart(w1)}  counted`,
    ...rows.map(([a, b, c]) => {
      const mark = b !== '' && String(b) !== String(c) ? '   <-- WRONG' : '';
      return `  ${a.padEnd(w0)}  ${String(b).padStart(w1)}  ${c}${mark}`;
    }),
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err) => {
  say(`failed: ${err.message}`);
  process.exit(1);
});
