// bench/messaging.mjs — POST /v2/messages throughput with Idempotency-Key (new keys, then
// replays), and carrier receipt → status visible latency. Runs the real app (`node dist/main.js
// all`) on a fresh database against a local fake carrier; loopback only, bounded in time.
// Usage: npm run bench:messaging [-- --seconds 20 --connections 32 --receipts-per-second 100]
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { closedLoop, createAccountWithNumber, fmt, freePort, freshDatabase, machine, percentile, REDIS_URL, request, startRole, telnyxHeaders, telnyxKeyPair } from './lib.mjs';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '32' },
    'receipts-per-second': { type: 'string', default: '100' },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const RECEIPT_RATE = Number(values['receipts-per-second']);

// A fake Telnyx send API: accepts everything with a fresh id.
const carrier = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: { id: randomUUID(), record_type: 'message' } }));
  });
});
await new Promise((r) => carrier.listen(0, '127.0.0.1', r));
const carrierUrl = `http://127.0.0.1:${carrier.address().port}`;

const { privateKey, publicKeyBase64 } = telnyxKeyPair();
const db = await freshDatabase('onceline_bench_msg');
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  DATABASE_URL: db.url,
  REDIS_URL,
  QUEUE_PREFIX: `benchmsg${port}`,
  PORT: String(port),
  LOG_LEVEL: 'warn',
  TELNYX_API_URL: `${carrierUrl}/v2`,
  TELNYX_PUBLIC_KEY: publicKeyBase64,
  API_RATE_LIMIT_PER_MINUTE: '100000000',
  // This measures the API and receipts, not pacing (bench/messaging-pacing.mjs): its one number
  // sends as fast as the workers go instead of a long code's 1 a second.
  MESSAGE_SEND_RATE_DEFAULT: '1000',
};
const app = await startRole('all', env, { readyUrl: `${base}/health/ready` });
const pool = new pg.Pool({ connectionString: db.url, max: 4 });

try {
  const { auth } = await createAccountWithNumber(base, env, { phoneNumber: '+15550100000', carrier: 'telnyx' });
  const body = JSON.stringify({ from: '+15550100000', to: '+15550199999', text: 'benchmark message' });

  // 1. New Idempotency-Keys: every request creates a message, its history, its dispatch job and the key row.
  const keys = [];
  const fresh = await closedLoop({
    connections: CONNECTIONS,
    seconds: SECONDS,
    once: async () => {
      const key = `k-${randomUUID()}`;
      const res = await request(`${base}/v2/messages`, { method: 'POST', headers: { ...auth, 'idempotency-key': key }, body });
      if (res.status !== 202) return false;
      keys.push(key);
    },
  });

  // 2. Replays of those keys: the stored response comes back, nothing is written.
  let next = 0;
  const replay = await closedLoop({
    connections: CONNECTIONS,
    seconds: SECONDS,
    once: async () => {
      const key = keys[next++ % keys.length];
      const res = await request(`${base}/v2/messages`, { method: 'POST', headers: { ...auth, 'idempotency-key': key }, body });
      return res.status === 202 && res.headers['idempotent-replayed'] === 'true';
    },
  });
  const messages = Number((await pool.query(`SELECT count(*) FROM messages`)).rows[0].count);

  // 3. Receipt → status visible: wait until dispatch has stamped carrier ids, then send one signed
  //    delivered receipt per message at a fixed rate; latency = request start → the committed
  //    'delivered' history row (same clock: this machine).
  const until = Date.now() + 120_000;
  while (Date.now() < until && Number((await pool.query(`SELECT count(*) FROM messages WHERE status IN ('queued','sending')`)).rows[0].count) > 0) {
    await new Promise((r) => setTimeout(r, 200));
  }
  const targets = (await pool.query(`SELECT id, carrier_message_id FROM messages WHERE status = 'sent' ORDER BY id LIMIT $1`, [RECEIPT_RATE * SECONDS])).rows;
  const sentAt = new Map();
  const interval = 1000 / RECEIPT_RATE;
  const start = performance.now();
  const pending = [];
  for (let i = 0; i < targets.length; i++) {
    const wait = start + i * interval - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t = targets[i];
    const receipt = JSON.stringify({
      data: { event_type: 'message.finalized', id: randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event',
        payload: { id: t.carrier_message_id, record_type: 'message', direction: 'outbound', to: [{ phone_number: '+15550199999', status: 'delivered' }], errors: [] } },
      meta: { attempt: 1, delivered_to: `${base}/webhooks/telnyx` },
    });
    const headers = telnyxHeaders(privateKey, receipt);
    sentAt.set(t.id, Date.now());
    pending.push(request(`${base}/webhooks/telnyx`, { method: 'POST', headers, body: receipt }));
  }
  await Promise.all(pending);
  const settleUntil = Date.now() + 60_000;
  let delivered = [];
  while (Date.now() < settleUntil) {
    delivered = (await pool.query(`SELECT h.message_id, (extract(epoch FROM h.at) * 1000)::float8 AS at FROM message_status_history h WHERE h.status = 'delivered'`)).rows;
    if (delivered.length >= targets.length) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const receiptLatencies = delivered.map((r) => r.at - sentAt.get(r.message_id)).filter(Number.isFinite);

  const ok = (r) => r.latencies.length / r.seconds;
  console.log(`\n## Messaging (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: npm run bench:messaging -- --seconds ${SECONDS} --connections ${CONNECTIONS} --receipts-per-second ${RECEIPT_RATE}\n`);
  console.log('| measure | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|');
  console.log(`| POST /v2/messages, new Idempotency-Key | ${fmt(ok(fresh))} | ${fmt(percentile(fresh.latencies, 50))} | ${fmt(percentile(fresh.latencies, 99))} | ${fresh.errors} |`);
  console.log(`| POST /v2/messages, replayed key | ${fmt(ok(replay))} | ${fmt(percentile(replay.latencies, 50))} | ${fmt(percentile(replay.latencies, 99))} | ${replay.errors} |`);
  console.log(`| carrier receipt → status visible (${RECEIPT_RATE}/s, ${targets.length} receipts, ${receiptLatencies.length} applied) | | ${fmt(percentile(receiptLatencies, 50))} | ${fmt(percentile(receiptLatencies, 99))} | ${targets.length - receiptLatencies.length} |`);
  console.log(`\nmessages created: ${messages} (one per new key: ${messages === keys.length ? 'yes' : `NO, ${keys.length} keys`})`);
} finally {
  await pool.end();
  await app.stop();
  carrier.close();
  await db.drop();
}
