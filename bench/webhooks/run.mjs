// Customer webhooks benchmark (`npm run bench:webhooks`, which builds first). Loopback only, bounded.
//
// The real relay and worker run as child processes (`node dist/main.js relay|worker`); events are
// emitted from this process with the real CustomerEvents.emit (one transaction per event, one
// subscribed endpoint) and delivered to a local HTTP receiver that answers 200 at once.
// 1. Latency: BENCH_RATE events/s (default 500) for BENCH_SECONDS (default 30). Latency = the
//    receiver's arrival time of the event's first request minus the moment its COMMIT returned.
// 2. Throughput: BENCH_BURST events (default 10,000) committed as fast as 100-event transactions
//    allow; deliveries/s = events / (last arrival - first commit).
// Checks that every event arrived, and counts duplicates (at least once, so normally 0).
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../dist/lib/platform/config/app-config.js';
import { UnitOfWork } from '../../dist/lib/platform/database/unit-of-work.js';
import { OutboxService } from '../../dist/lib/platform/outbox/outbox.service.js';
import { RelayWakeup } from '../../dist/lib/platform/outbox/relay-wakeup.js';
import { CustomerEvents } from '../../dist/lib/modules/webhooks/customer-events.js';
import { DeliveryScheduler } from '../../dist/lib/modules/webhooks/delivery-scheduler.js';
import { fmt, freshDatabase, machine, percentile, REDIS_URL, startRole } from '../lib.mjs';

const env = process.env;
const RATE = Number(env.BENCH_RATE ?? 500);
const SECONDS = Number(env.BENCH_SECONDS ?? 30);
const BURST = Number(env.BENCH_BURST ?? 10_000);
const DRAIN_TIMEOUT_MS = 120_000;
const say = (line) => process.stderr.write(`[bench:webhooks] ${line}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nowMs = () => performance.timeOrigin + performance.now();

const arrivals = new Map();
let duplicates = 0;
const receiver = http.createServer((req, res) => {
  const at = nowMs();
  req.resume();
  req.on('end', () => {
    const id = req.headers['webhook-id'];
    if (arrivals.has(id)) duplicates++;
    else arrivals.set(id, at);
    res.writeHead(200).end('ok');
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}/hook`;

const db = await freshDatabase('onceline_bench_wh');
const prefix = `benchwh${randomBytes(4).toString('hex')}`;
/** Settings under test: the application's defaults unless WORKER_* / OUTBOX_* are set. */
const tuning = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('OUTBOX_') || k.startsWith('WORKER_')));
const roleEnv = { DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', PORT: '0', ...tuning };
const config = loadConfig(roleEnv);
const dataSource = await new DataSource({ type: 'postgres', url: db.url, entities: [], extra: { max: 32 } }).initialize();
const uow = new UnitOfWork(dataSource);
const outbox = new OutboxService(dataSource, new RelayWakeup(dataSource), config);
const events = new CustomerEvents(new DeliveryScheduler(outbox, config), outbox);
const roles = [];

try {
  const [{ id: accountId }] = await dataSource.query(`INSERT INTO accounts (id, name) VALUES ('acct_bench', 'bench') RETURNING id`);
  await dataSource.query(`INSERT INTO webhook_endpoints (id, account_id, url, secret) VALUES ('we_bench', $1, $2, 'whsec_YmVuY2hiZW5jaGJlbmNoYmVuY2g=')`, [accountId, receiverUrl]);
  roles.push(await startRole('relay', roleEnv), await startRole('worker', roleEnv));

  const commits = new Map();
  const emitOne = (n) => uow.run((tx) => events.emit(tx, accountId, 'message.delivered', { id: `msg_${n}`, status: 'delivered' })).then((id) => commits.set(id, nowMs()));
  const waitAll = async (ids, what) => {
    const until = Date.now() + DRAIN_TIMEOUT_MS;
    while (Date.now() < until && !ids.every((id) => arrivals.has(id))) await sleep(20);
    const missing = ids.filter((id) => !arrivals.has(id)).length;
    if (missing) throw new Error(`${what}: ${missing} events never arrived`);
  };

  // Warm-up: the roles are up and the path is hot.
  await emitOne(-1);
  await waitAll([...commits.keys()], 'warm-up');
  commits.clear();

  say(`latency: ${RATE} events/s for ${SECONDS} s`);
  const started = Date.now();
  const pending = [];
  let n = 0;
  while (Date.now() - started < SECONDS * 1000) {
    const due = Math.floor(((Date.now() - started) / 1000) * RATE);
    while (n < due) pending.push(emitOne(n++));
    await sleep(5);
  }
  await Promise.all(pending);
  const offered = n / SECONDS;
  const latencyIds = [...commits.keys()];
  await waitAll(latencyIds, 'latency phase');
  const latencies = latencyIds.map((id) => Math.max(0, arrivals.get(id) - commits.get(id)));

  say(`throughput: burst of ${BURST} events`);
  commits.clear();
  const burstStart = nowMs();
  for (let i = 0; i < BURST; i += 100) {
    await uow.run(async (tx) => {
      for (let j = i; j < Math.min(BURST, i + 100); j++) await events.emit(tx, accountId, 'message.sent', { id: `msg_b${j}` });
    });
  }
  const burstCommitted = nowMs();
  const burstIds = (await dataSource.query(`SELECT id FROM outbound_events WHERE type = 'message.sent'`)).map((r) => r.id);
  await waitAll(burstIds, 'burst');
  const lastArrival = Math.max(...burstIds.map((id) => arrivals.get(id)));
  const perSecond = burstIds.length / ((lastArrival - burstStart) / 1000);
  const delivered = Number((await dataSource.query(`SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'`))[0].count);

  const result = {
    machine: machine(),
    load_average_1m_at_end: Number(fmt(loadavg()[0])),
    latency: {
      offered_events_per_second: Math.round(offered),
      events: latencies.length,
      p50_ms: Number(fmt(percentile(latencies, 50))),
      p99_ms: Number(fmt(percentile(latencies, 99))),
      max_ms: Number(fmt(Math.max(...latencies))),
    },
    throughput: {
      events: burstIds.length,
      commit_seconds: Number(fmt((burstCommitted - burstStart) / 1000, 2)),
      deliveries_per_second: Math.round(perSecond),
    },
    delivered_rows: delivered,
    duplicate_requests: duplicates,
    worker_concurrency: config.WORKER_CONCURRENCY,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await Promise.all(roles.map((r) => r.stop()));
  await dataSource.destroy();
  receiver.close();
  await db.drop();
}
