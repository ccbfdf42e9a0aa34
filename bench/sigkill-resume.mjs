// bench/sigkill-resume.mjs — how soon work held by a SIGKILLed worker resumes elsewhere, and that
// it happens once in effect. An api, a relay and two workers (`node dist/main.js <role>`) on a
// fresh database; a burst of signed inbound SMS whose `message.received` goes to a customer
// endpoint that holds every answer (a slow server), so each worker holds webhook deliveries: run
// after commit (leased outbox rows, WORKER_AFTER_COMMIT_GRACE_SECONDS) or taken from Redis
// (BullMQ locks, WORKER_LOCK_DURATION_MS). Then one worker is SIGKILLed and the endpoint answers
// from then on: for every delivery the dead worker had sent and not finished, kill → the same
// webhook-id asked again by the survivor; and, once all is done, deliveries per message (must be
// 1), customer events per message (must be 1). Loopback only, bounded in time.
// Usage: npm run bench:sigkill [-- --messages 300]
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createAccountWithNumber, fmt, freePort, freshDatabase, machine, percentile, REDIS_URL, request, startRole, telnyxHeaders, telnyxKeyPair, troublesCell } from './lib.mjs';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '300' } } });
const MESSAGES = Number(values.messages);
const OUR_NUMBER = '+15550100000';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The customer endpoint: records each request (webhook-id, time); holds its answer until answering() (then answers at once). */
const asked = []; // { id, at }
const held = [];
let answering = false;
const endpoint = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    asked.push({ id: String(req.headers['webhook-id']), at: performance.now() });
    if (answering) res.writeHead(200).end('ok');
    else held.push(res);
  });
});
await new Promise((r) => endpoint.listen(0, '127.0.0.1', r));
const answerFromNowOn = () => {
  answering = true;
  for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200).end('ok');
};

const { privateKey, publicKeyBase64 } = telnyxKeyPair();
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const db = await freshDatabase('onceline_bench_sigkill');
const env = {
  DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: `benchkill${port}`, PORT: String(port), LOG_LEVEL: 'warn',
  TELNYX_PUBLIC_KEY: publicKeyBase64, WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', API_RATE_LIMIT_PER_MINUTE: '100000000',
  // The endpoint holds its answers for the whole wait: no delivery may time out meanwhile.
  WEBHOOK_TIMEOUT_MS: '120000',
  ...(process.env.BENCH_APP_ENV ? JSON.parse(process.env.BENCH_APP_ENV) : {}),
};
const started = [];
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
try {
  started.push(await startRole('api', env, { readyUrl: `${base}/health/ready` }));
  started.push(await startRole('relay', env, { readyLine: /onceline relay started/ }));
  const victim = await startRole('worker', env, { readyLine: /onceline worker started/ });
  started.push(victim, await startRole('worker', env, { readyLine: /onceline worker started/ }));
  const { auth } = await createAccountWithNumber(base, env, { phoneNumber: OUR_NUMBER });
  const hook = await request(`${base}/v2/webhook_endpoints`, { method: 'POST', headers: auth, body: JSON.stringify({ url: `http://127.0.0.1:${endpoint.address().port}/hook`, event_types: ['message.received'] }) });
  if (hook.status !== 201) throw new Error(`endpoint: ${hook.status} ${hook.body}`);

  await Promise.all(Array.from({ length: MESSAGES }, async (_, i) => {
    const body = JSON.stringify({
      data: { event_type: 'message.received', id: randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event',
        payload: { id: randomUUID(), record_type: 'message', direction: 'inbound', type: 'SMS', from: { phone_number: '+13125550001' }, to: [{ phone_number: OUR_NUMBER, status: 'webhook_delivered' }], text: `kill ${i}`, parts: 1, errors: [] } },
      meta: { attempt: 1, delivered_to: `${base}/webhooks/telnyx` },
    });
    const res = await request(`${base}/webhooks/telnyx`, { method: 'POST', headers: telnyxHeaders(privateKey, body), body });
    if (res.status !== 200) throw new Error(`inbound ${i}: ${res.status} ${res.body}`);
  }));
  // Until the endpoint has been asked for as many deliveries as it will get while it holds them
  // (the workers' places are full): a count that stops growing for a second.
  let seen = -1;
  for (const until = Date.now() + 60_000; Date.now() < until && seen !== asked.length; ) {
    seen = asked.length;
    await sleep(1000);
  }
  const askedBeforeKill = new Set(asked.map((a) => a.id));
  victim.child.kill('SIGKILL');
  const killedAt = performance.now();
  await new Promise((r) => (victim.child.exitCode !== null || victim.child.signalCode !== null ? r() : victim.child.once('exit', r)));
  // The survivor's held requests are answered now (its deliveries finish); the victim's died with it.
  answerFromNowOn();

  const done = async () => Number((await pool.query(`SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`)).rows[0].count);
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline && (await done()) < MESSAGES) await sleep(200);
  const delivered = await done();
  // Held by the victim: asked before the kill and asked again after it (the survivor's were answered once, never again).
  const resumed = [];
  for (const id of askedBeforeKill) {
    const again = asked.find((a) => a.id === id && a.at > killedAt);
    if (again) resumed.push(again.at - killedAt);
  }
  const [{ deliveries, events, doubles }] = (await pool.query(
    `SELECT (SELECT count(*) FROM webhook_deliveries)::int AS deliveries,
            (SELECT count(*) FROM outbound_events WHERE type = 'message.received')::int AS events,
            (SELECT count(*) FROM (SELECT 1 FROM outbound_events WHERE type = 'message.received' GROUP BY coalesce(payload->>'carrier_message_id', payload->'data'->>'carrier_message_id') HAVING count(*) > 1) d)::int AS doubles`,
  )).rows;
  console.log(`\n## SIGKILL resume (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: npm run bench:sigkill -- --messages ${MESSAGES}\n`);
  console.log(`${MESSAGES} inbound SMS; api, relay and two workers; the customer endpoint holds every answer until one worker is SIGKILLed (after-commit lease and BullMQ lock: the app's defaults, WORKER_AFTER_COMMIT_GRACE_SECONDS and WORKER_LOCK_DURATION_MS, unless BENCH_APP_ENV sets them).\n`);
  console.log('| measure | value |\n|---|---|');
  console.log(`| deliveries asked before the kill (both workers) | ${askedBeforeKill.size} |`);
  console.log(`| held by the killed worker and resumed by the other: count | ${resumed.length} |`);
  console.log(`| … kill → asked again, p50 / p99 / max | ${fmt(percentile(resumed, 50))} / ${fmt(percentile(resumed, 99))} / ${fmt(Math.max(...resumed))} ms |`);
  console.log(`| messages delivered / deliveries / message.received events / events twice for one message | ${delivered} of ${MESSAGES} / ${deliveries} / ${events} / ${doubles} |`);
  console.log(`| pool connect timeouts / deadlocks in every role's log / deadlocks PostgreSQL counted in this database | ${await troublesCell(started, pool)} |`);
  if (delivered < MESSAGES || deliveries !== MESSAGES || events !== MESSAGES || doubles > 0) process.exitCode = 1;
} finally {
  await pool.end();
  for (const role of started.reverse()) await role.stop();
  endpoint.closeAllConnections();
  endpoint.close();
  await db.drop();
}
