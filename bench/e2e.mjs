// bench/e2e.mjs — carrier webhook in → customer webhook out. Signed Telnyx inbound SMS webhooks
// at a fixed rate into the real app (`node dist/main.js all` plus extra workers), a local
// customer endpoint receiving `message.received`; reports throughput, end-to-end p50/p99 and the
// app's peak RSS. Loopback only, bounded in time.
// Usage: npm run bench:e2e [-- --rate 500 --seconds 60 --workers 1]
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { createAccountWithNumber, fmt, freePort, freshDatabase, machine, peakRssBytes, percentile, REDIS_URL, request, startRole, telnyxHeaders, telnyxKeyPair } from './lib.mjs';

const { values } = parseArgs({ options: { rate: { type: 'string', default: '500' }, seconds: { type: 'string', default: '60' }, workers: { type: 'string', default: '1' } } });
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const EXTRA_WORKERS = Number(values.workers);

const sentAt = new Map();
const latencies = [];
const seenEvents = new Set();
let deliveries = 0;
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    deliveries++;
    const id = req.headers['webhook-id'];
    if (!seenEvents.has(id)) {
      seenEvents.add(id);
      const event = JSON.parse(body);
      const t0 = sentAt.get(event.data.carrier_message_id);
      if (t0 !== undefined) latencies.push(performance.now() - t0);
    }
    res.writeHead(204).end();
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));

const { privateKey, publicKeyBase64 } = telnyxKeyPair();
const db = await freshDatabase('onceline_bench_e2e');
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: `benche2e${port}`, PORT: String(port), LOG_LEVEL: 'warn',
  TELNYX_PUBLIC_KEY: publicKeyBase64,
  WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', API_RATE_LIMIT_PER_MINUTE: '100000000',
};
const app = await startRole('all', env, { readyUrl: `${base}/health/ready` });
const workers = await Promise.all(Array.from({ length: EXTRA_WORKERS }, () => startRole('worker', env)));
const peakRss = () => [app, ...workers].map((p) => peakRssBytes(p.child.pid) || 0);

try {
  const { auth } = await createAccountWithNumber(base, env, { phoneNumber: '+15550100000', carrier: 'telnyx' });
  const endpoint = await request(`${base}/v2/webhook_endpoints`, { method: 'POST', headers: auth, body: JSON.stringify({ url: `http://127.0.0.1:${receiver.address().port}/hook`, event_types: ['message.received'] }) });
  if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${endpoint.body}`);

  const total = RATE * SECONDS;
  const interval = 1000 / RATE;
  const start = performance.now();
  const inflight = [];
  let rejected = 0;
  for (let i = 0; i < total; i++) {
    const wait = start + i * interval - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const carrierMessageId = randomUUID();
    const body = JSON.stringify({
      data: { event_type: 'message.received', id: randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event',
        payload: { id: carrierMessageId, record_type: 'message', direction: 'inbound', type: 'SMS', from: { phone_number: '+13125550001' },
          to: [{ phone_number: '+15550100000', status: 'webhook_delivered' }], text: `bench ${i}`, parts: 1, errors: [] } },
      meta: { attempt: 1, delivered_to: `${base}/webhooks/telnyx` },
    });
    const headers = telnyxHeaders(privateKey, body);
    sentAt.set(carrierMessageId, performance.now());
    inflight.push(request(`${base}/webhooks/telnyx`, { method: 'POST', headers, body }).then((r) => r.status !== 200 && rejected++, () => rejected++));
  }
  const sendSeconds = (performance.now() - start) / 1000;
  await Promise.all(inflight);
  const until = Date.now() + 180_000;
  while (seenEvents.size < total - rejected && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  const drainSeconds = (performance.now() - start) / 1000;
  const rss = peakRss();
  console.log(`\n## End to end: carrier webhook → customer webhook (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: npm run bench:e2e -- --rate ${RATE} --seconds ${SECONDS} --workers ${EXTRA_WORKERS}\n`);
  console.log('| measure | value |\n|---|---|');
  console.log(`| inbound webhooks offered | ${total} at ${RATE}/s (sent in ${fmt(sendSeconds)} s), ${rejected} not answered 200 |`);
  console.log(`| customer events received (distinct webhook-id) | ${seenEvents.size} (${deliveries} deliveries) |`);
  console.log(`| throughput, first send → last event | ${fmt(seenEvents.size / drainSeconds)} events/s |`);
  console.log(`| carrier webhook → customer webhook p50 / p99 | ${fmt(percentile(latencies, 50))} ms / ${fmt(percentile(latencies, 99))} ms |`);
  console.log(`| peak RSS (all role + ${EXTRA_WORKERS} worker) | ${rss.map((b) => `${fmt(b / 2 ** 20, 0)} MiB`).join(' + ')} |`);
  // Where the time goes: each job kind's wait for the relay and its run, from the outbox rows.
  const pool = new (await import('pg')).default.Pool({ connectionString: db.url, max: 1 });
  const stages = (await pool.query(`
    SELECT name, count(*)::int AS jobs,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM relayed_at - run_at) * 1000) AS relay_p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM relayed_at - run_at) * 1000) AS relay_p99,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - relayed_at) * 1000) AS run_p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - relayed_at) * 1000) AS run_p99
      FROM outbox_jobs GROUP BY name ORDER BY name`)).rows;
  await pool.end();
  console.log('\n| job | jobs | due → in Redis p50 / p99 ms | in Redis → done p50 / p99 ms |\n|---|---|---|---|');
  for (const s of stages) console.log(`| ${s.name} | ${s.jobs} | ${fmt(s.relay_p50)} / ${fmt(s.relay_p99)} | ${fmt(s.run_p50)} / ${fmt(s.run_p99)} |`);
  if (process.env.BENCH_SHOW_LOG) console.log(JSON.stringify(app.logged()));
  if (seenEvents.size !== total - rejected) process.exitCode = 1;
} finally {
  await Promise.all([app, ...workers].map((p) => p.stop()));
  receiver.close();
  await db.drop();
}
