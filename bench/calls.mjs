// bench/calls.mjs — inbound calls through three-target ring plans, every leg webhook duplicated:
// carrier event → next dial issued (p50/p99), and wrong dials (must be 0). Runs the real app
// (`node dist/main.js all`) on a fresh database against a local fake Telnyx Call Control that
// plays the carrier: targets 0 and 1 ring out (each hangup sent twice at once, under two event
// ids), target 2 answers, the caller hangs up once bridged. Loopback only, bounded in time.
// A warm-up round of calls (--warmup, default 20; not counted) runs first, so the figures are
// those of a server that has been running (V8 has compiled the hot path), not of its first calls.
// --ring-ms: how long targets 0 and 1 ring before they time out (default 50, far shorter than any
// carrier allows, so the calls' events come as fast as the app answers them: a closed loop at its
// throughput); 5000 is the contract's least `timeout_secs`, where the load comes in waves.
// --sms-burst N: while the (last) measured round rings, N signed inbound SMS to another number at
// --sms-rate per second, whose `message.received` goes to a customer endpoint answering after
// --sms-answer-ms (default 300), and GET /v2/messages asked every 50 ms: the ring figures beside
// bulk work, the SMS' end-to-end latency and the customer API's latency and non-2xx answers.
// --count-statements: the statements (round trips) the app sent during the measured rounds, per
// call and per carrier event, and the most frequent (bench/statement-counter.mjs).
// --sms-cost N (default 1000; 0: off): after the measured rounds, on the same started system, N
// signed inbound SMS to another number at --sms-cost-rate per second (default 200), each delivered
// to a customer endpoint answering at once; CPU per inbound SMS end to end (app + PostgreSQL, from
// /proc, ingest to customer delivery) beside CPU per call event, and their ratio: what a call event
// costs in SMS. The statements count (--count-statements) ends before this phase. Off with
// --sms-burst or --sigkill-after-ms.
// --sigkill-after-ms T: a second `all` process runs beside the first; T ms into the (last) measured
// round the first is SIGKILLed and the carrier delivers to the second from then on (a load
// balancer's failover). What the dead process held (events it stored and had not processed,
// commands it had decided and not sent or not heard back on) resumes once its leases run out:
// for each hand-off, bridge and first dial the kill cut across, kill → the command at the carrier;
// every call must still complete, dialed and bridged once. Not with --count-statements.
// Usage: npm run bench:calls [-- --calls 200 --ring-ms 50 --warmup 20 --rounds 1 --sms-burst 2000 --count-statements --sigkill-after-ms 1000 --sms-cost 1000 --sms-cost-rate 200]
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { newRun, startInboundLoad } from './e2e-load.mjs';
import { assignNumber, cpuSecondsOf, createAccountWithNumber, fmt, freePort, freshDatabase, machine, percentile, REDIS_URL, request, startRole, telnyxHeaders, telnyxKeyPair, troublesCell } from './lib.mjs';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '200' }, 'ring-ms': { type: 'string', default: '50' }, warmup: { type: 'string', default: '20' }, rounds: { type: 'string', default: '1' },
  'sms-burst': { type: 'string', default: '0' }, 'sms-rate': { type: 'string', default: '1000' }, 'sms-answer-ms': { type: 'string', default: '300' },
  'count-statements': { type: 'boolean', default: false }, 'sigkill-after-ms': { type: 'string', default: '0' },
  'sms-cost': { type: 'string', default: '1000' }, 'sms-cost-rate': { type: 'string', default: '200' } } });
const CALLS = Number(values.calls);
const RING_MS = Number(values['ring-ms']);
const WARMUP = Number(values.warmup);
/** Measured rounds of CALLS calls at once, one after another (more hand-offs for the percentiles). */
const ROUNDS = Number(values.rounds);
const SMS_BURST = Number(values['sms-burst']);
const SMS_RATE = Number(values['sms-rate']);
const SMS_NUMBER = '+15550100001';
/** Inbound SMS of the cost phase (--sms-cost), to their own number, after the call rounds. */
const SMS_COST = Number(values['sms-cost']);
const SMS_COST_RATE = Number(values['sms-cost-rate']);
const SMS_COST_NUMBER = '+15550100002';
const OUR_NUMBER = '+15550100000';
const TARGETS = ['+15557000001', '+15557000002', '+15557000003'];
const SIGKILL_AFTER_MS = Number(values['sigkill-after-ms']);
if (SIGKILL_AFTER_MS > 0 && values['count-statements']) throw new Error('--sigkill-after-ms and --count-statements: the statements of a process that dies are not counted; run them apart');

const { privateKey, publicKeyBase64 } = telnyxKeyPair();
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
/** Where the carrier delivers: the first process, or after --sigkill-after-ms the second. */
let deliverTo = base;
/** performance.now() of the SIGKILL (--sigkill-after-ms), and what each wait it cut across took from it. */
let killedAt;
let killedWallAt;
const resumedAfterKill = { handOff: [], bridge: [], firstDial: [] };
const acrossKill = (kind, startedAt, now) => {
  if (killedAt !== undefined && startedAt < killedAt && now > killedAt) resumedAfterKill[kind].push(now - killedAt);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Signs and posts one Telnyx call event to the app, retrying until it answers 200 (as Telnyx does). */
async function deliver(eventType, payload, id = randomUUID()) {
  const body = JSON.stringify({ data: { event_type: eventType, id, occurred_at: new Date().toISOString(), record_type: 'event', payload }, meta: { attempt: 1, delivered_to: `${base}/webhooks/telnyx` } });
  for (let attempt = 0; attempt < 20; attempt++) {
    const res = await request(`${deliverTo}/webhooks/telnyx`, { method: 'POST', headers: telnyxHeaders(privateKey, body), body }).catch(() => ({ status: 0 }));
    if (res.status === 200) return;
    await sleep(100 * (attempt + 1));
  }
  throw new Error(`${eventType} never accepted`);
}

const sessions = new Map(); // session → { caller, startedAt, dials: [{target, attempt, commandId}], hangupSentAt: Map<target, ms>, answerSentAt, bridged }
const latencies = [];
/** Call start (caller's call.initiated sent) → first dial at the carrier; answer sent → bridge at the carrier. */
const firstDialLatencies = [];
const bridgeLatencies = [];
/** Each hand-off: the leg events sent (their ids), when, and the next dial's command id, for the stage breakdown. */
const handOffs = [];
const commandIds = new Map(); // command_id → call_control_id (the carrier does a command once)
let retriedCommands = 0;

const telnyx = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    const body = raw ? JSON.parse(raw) : {};
    const known = commandIds.get(body.command_id);
    const controlId = known ?? `v3:leg-${randomUUID()}`;
    if (known) retriedCommands++;
    else commandIds.set(body.command_id, controlId);
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url === '/v2/calls') {
      res.end(JSON.stringify({ data: { call_control_id: controlId, call_leg_id: randomUUID(), call_session_id: body.link_to, record_type: 'call' } }));
      if (!known) onDial(body, controlId);
      return;
    }
    res.end(JSON.stringify({ data: { result: 'ok' } }));
    const action = /^\/v2\/calls\/([^/]+)\/actions\/([a-z_]+)$/.exec(req.url ?? '');
    if (!known && action?.[2] === 'bridge') onBridge(decodeURIComponent(action[1]));
  });
});
await new Promise((r) => telnyx.listen(0, '127.0.0.1', r));

function sessionOfCaller(callerControlId) {
  for (const [id, s] of sessions) if (s.caller === callerControlId) return [id, s];
  return [];
}

function onDial(body, controlId) {
  const [session, call] = sessionOfCaller(body.link_to);
  if (!call) return;
  const state = JSON.parse(Buffer.from(body.client_state, 'base64').toString());
  const now = performance.now();
  const previous = call.hangupSentAt.get(state.target - 1);
  if (previous !== undefined) {
    latencies.push(now - previous);
    acrossKill('handOff', previous, now);
    handOffs.push({ eventIds: call.hangupEventIds.get(state.target - 1), sentAt: call.hangupWallAt.get(state.target - 1), dialCommandId: body.command_id, dialAt: Date.now() });
  }
  if (state.target === 0) {
    firstDialLatencies.push(now - call.startedAt);
    acrossKill('firstDial', call.startedAt, now);
  }
  call.dials.push({ target: state.target, attempt: state.attempt, commandId: body.command_id });
  const leg = { call_control_id: controlId, call_session_id: session, client_state: body.client_state, from: body.from, to: body.to, direction: 'outgoing' };
  setTimeout(async () => {
    await deliver('call.initiated', { ...leg, state: 'bridging' });
    if (state.target < 2) {
      const ids = [randomUUID(), randomUUID()];
      call.hangupSentAt.set(state.target, performance.now());
      call.hangupWallAt.set(state.target, Date.now());
      call.hangupEventIds.set(state.target, ids);
      const hangup = { ...leg, hangup_cause: 'timeout', hangup_source: 'callee', sip_hangup_cause: '487' };
      await Promise.all(ids.map((id) => deliver('call.hangup', hangup, id)));
    } else {
      call.answerSentAt = performance.now();
      await Promise.all([deliver('call.answered', leg), deliver('call.answered', leg)]);
    }
  }, RING_MS);
}

function onBridge(callerControlId) {
  const [session, call] = sessionOfCaller(callerControlId);
  if (!call) return;
  call.bridged++;
  if (call.answerSentAt !== undefined) {
    bridgeLatencies.push(performance.now() - call.answerSentAt);
    acrossKill('bridge', call.answerSentAt, performance.now());
  }
  setTimeout(() => deliver('call.hangup', { call_control_id: call.caller, call_session_id: session, client_state: null, from: '+15559000000', to: OUR_NUMBER, hangup_cause: 'normal_clearing', hangup_source: 'caller' }), RING_MS);
}

const db = await freshDatabase('onceline_bench_calls');
const env = {
  DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: `benchcalls${port}`, PORT: String(port), LOG_LEVEL: 'warn',
  TELNYX_API_URL: `http://127.0.0.1:${telnyx.address().port}/v2`, TELNYX_PUBLIC_KEY: publicKeyBase64, WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', API_RATE_LIMIT_PER_MINUTE: '100000000', ...(process.env.BENCH_APP_ENV ? JSON.parse(process.env.BENCH_APP_ENV) : {}),
};
const countFile = values['count-statements'] ? `${os.tmpdir()}/onceline-bench-statements-${port}.json` : undefined;
const readCounts = () => (countFile && existsSync(countFile) ? JSON.parse(readFileSync(countFile, 'utf8')) : {});
const app = await startRole('all', countFile ? { ...env, BENCH_STATEMENT_COUNT_FILE: countFile } : env, {
  readyUrl: `${base}/health/ready`,
  nodeArgs: countFile ? ['--import', new URL('./statement-counter.mjs', import.meta.url).href] : [],
});
// The failover target (--sigkill-after-ms): the same system, idle until the first dies.
const spare = SIGKILL_AFTER_MS > 0 ? await (async () => {
  const sparePort = await freePort();
  const role = await startRole('all', { ...env, PORT: String(sparePort) }, { readyUrl: `http://127.0.0.1:${sparePort}/health/ready` });
  return { ...role, base: `http://127.0.0.1:${sparePort}` };
})() : undefined;
let countsBefore = {};
let countsAfterCalls = {};
/**
 * The SMS cost phase (--sms-cost): SMS_COST inbound SMS end to end on the system the calls ran on;
 * app + PostgreSQL CPU seconds per SMS delivered, from the same /proc readings as the calls'.
 */
async function measureSmsCost() {
  // The system's idle CPU (timers, the relay's polls) for 2 s first: what a phase costs when it does nothing.
  const idleFrom = await cpuSnapshot();
  await sleep(2000);
  const before = await cpuSnapshot();
  const idlePerSecond = (before.app - idleFrom.app + before.postgres - idleFrom.postgres) / 2;
  const t = performance.now();
  await smsCostLoad.offer(base, smsCostRun, SMS_COST_RATE, SMS_COST / SMS_COST_RATE);
  await smsCostLoad.drain(smsCostRun, 120_000);
  // The last deliveries' completions are written after the endpoint heard them: let them land.
  await sleep(500);
  const after = await cpuSnapshot();
  return { app: after.app - before.app, postgres: after.postgres - before.postgres, seconds: (performance.now() - t) / 1000, idlePerSecond };
}
/**
 * CPU seconds used so far by the app, by this database's PostgreSQL backends (a backend started
 * since the last snapshot counts from 0) and by the bench itself; undefined where /proc is not.
 */
const backendCpu = new Map();
async function cpuSnapshot() {
  // No /proc; or the app was SIGKILLed (--sigkill-after-ms), and its CPU died with it.
  if (!existsSync('/proc/self/stat') || killedAt !== undefined) return undefined;
  const { rows } = await pool.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()`);
  for (const { pid } of rows) {
    try {
      backendCpu.set(pid, cpuSecondsOf(pid));
    } catch {
      // gone meanwhile: its last reading stands
    }
  }
  const own = process.cpuUsage();
  return { app: cpuSecondsOf(app.child.pid), postgres: [...backendCpu.values()].reduce((a, b) => a + b, 0), bench: (own.user + own.system) / 1e6 };
}
let eventsBefore = 0;
const smsLoad = SMS_BURST > 0 ? await startInboundLoad(privateKey, SMS_NUMBER, { answerAfterMs: Number(values['sms-answer-ms']) }) : undefined;
const smsCostLoad = SMS_COST > 0 && !SIGKILL_AFTER_MS && !SMS_BURST ? await startInboundLoad(privateKey, SMS_COST_NUMBER) : undefined;
const smsCostRun = newRun();
const smsRun = newRun();
const listLatencies = [];
let listFailures = 0;
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
try {
  const { auth, account } = await createAccountWithNumber(base, env, { phoneNumber: OUR_NUMBER });
  if (smsLoad) {
    assignNumber(env, account.account.id, SMS_NUMBER);
    const endpoint = await request(`${base}/v2/webhook_endpoints`, { method: 'POST', headers: auth, body: JSON.stringify({ url: smsLoad.hookUrl, event_types: ['message.received'] }) });
    if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${endpoint.body}`);
  }
  if (smsCostLoad) {
    assignNumber(env, account.account.id, SMS_COST_NUMBER);
    const endpoint = await request(`${base}/v2/webhook_endpoints`, { method: 'POST', headers: auth, body: JSON.stringify({ url: smsCostLoad.hookUrl, event_types: ['message.received'] }) });
    if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${endpoint.body}`);
  }
  const numbers = JSON.parse((await request(`${base}/v2/phone_numbers`, { headers: auth })).body).data;
  const voice = { voice: { ring_plan: { targets: TARGETS.map((to) => ({ to, timeout_secs: 20 })), fallback: { action: 'hangup' } } } };
  const ringing = numbers.find((n) => n.phone_number === OUR_NUMBER);
  const patched = await request(`${base}/v2/phone_numbers/${ringing.id}`, { method: 'PATCH', headers: auth, body: JSON.stringify(voice) });
  if (patched.status !== 200) throw new Error(`voice settings: ${patched.status} ${patched.body}`);

  /** Starts `count` calls at once and waits until `total` calls are completed in all (rounds add up). */
  const callRound = async (count, total) => {
    await Promise.all(Array.from({ length: count }, async (_, i) => {
      const session = randomUUID();
      const caller = `v3:caller-${randomUUID()}`;
      sessions.set(session, { caller, startedAt: performance.now(), dials: [], hangupSentAt: new Map(), hangupWallAt: new Map(), hangupEventIds: new Map(), bridged: 0 });
      await deliver('call.initiated', { call_control_id: caller, call_session_id: session, client_state: null, from: `+1555900${String(i).padStart(4, '0')}`, to: OUR_NUMBER, direction: 'incoming', state: 'parked' });
    }));
    const deadline = Date.now() + 180_000;
    let completed = 0;
    while (Date.now() < deadline) {
      completed = Number((await pool.query(`SELECT count(*) FROM calls WHERE status = 'completed'`)).rows[0].count);
      if (completed >= total) break;
      await sleep(completed >= total - count ? 50 : 200);
    }
    return completed;
  };
  if (WARMUP > 0) {
    const warm = await callRound(WARMUP, WARMUP);
    if (warm < WARMUP) throw new Error(`warm-up: ${warm} of ${WARMUP} calls completed`);
    // Only the measured round counts from here: its calls, hand-offs and latencies.
    sessions.clear();
    for (const list of [latencies, firstDialLatencies, bridgeLatencies, handOffs]) list.length = 0;
  }
  if (countFile) {
    await sleep(1100); // the counter writes its file every second
    countsBefore = readCounts();
  }
  eventsBefore = Number((await pool.query(`SELECT count(*) FROM carrier_events`)).rows[0].count);
  const cpuBefore = await cpuSnapshot();
  const t0 = performance.now();
  let completed = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    if (spare && round === ROUNDS) {
      setTimeout(() => {
        app.child.kill('SIGKILL');
        killedAt = performance.now();
        killedWallAt = Date.now();
        deliverTo = spare.base;
      }, SIGKILL_AFTER_MS);
    }
    if (!smsLoad || round < ROUNDS) {
      completed = (await callRound(CALLS, WARMUP + round * CALLS)) - WARMUP;
      continue;
    }
    // The last round rings beside the SMS burst (signed ahead: the calls start as the SMS do) and the API probe.
    const offered = smsLoad.offer(base, smsRun, SMS_RATE, SMS_BURST / SMS_RATE);
    await sleep(2000 + SMS_BURST * 0.1);
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t = performance.now();
        const res = await request(`${base}/v2/messages?limit=20`, { headers: auth }).catch(() => ({ status: 0 }));
        listLatencies.push(performance.now() - t);
        if (res.status < 200 || res.status >= 300) listFailures++;
        await sleep(50);
      }
    })();
    completed = (await callRound(CALLS, WARMUP + round * CALLS)) - WARMUP;
    await offered;
    await smsLoad.drain(smsRun, 120_000);
    probing = false;
    await probe;
  }
  const elapsed = (performance.now() - t0) / 1000;
  const cpuAfter = await cpuSnapshot();
  const eventsInRounds = Number((await pool.query(`SELECT count(*) FROM carrier_events`)).rows[0].count) - eventsBefore;
  // The statements counted are the call rounds' only: the counter's file as it stood before the SMS.
  if (countFile) {
    await sleep(1100);
    countsAfterCalls = readCounts();
  }
  const smsCost = smsCostLoad && cpuAfter ? await measureSmsCost() : undefined;
  const wrongDials = [...sessions.values()].reduce((n, s) => {
    const tries = new Set(s.dials.map((d) => `${d.target}/${d.attempt}`));
    return n + (s.dials.length - tries.size) + s.dials.filter((d) => d.target > 2 || d.attempt > 1).length;
  }, 0);
  const legsPerCall = [...sessions.values()].map((s) => s.dials.length);
  const [{ usage, events, carrierEvents, retries, jobRetries }] = (await pool.query(
    `SELECT (SELECT count(*) FROM usage_records WHERE kind = 'call_minutes')::int AS usage, (SELECT count(*) FROM outbound_events WHERE type = 'call.completed')::int AS events,
            (SELECT count(*) FROM carrier_events)::int AS "carrierEvents", (SELECT coalesce(sum(attempts - 1), 0) FROM carrier_events WHERE attempts > 1)::int AS retries,
            (SELECT count(*) FROM outbox_jobs WHERE attempts > 1 OR last_error IS NOT NULL)::int AS "jobRetries"`,
  )).rows;
  // Where a hand-off's time goes, from the first of its two leg hangups: sent → stored (ingest's
  // statement) → its processing began (the transaction's now()) → the next dial's first send
  // recorded (call_command_sends; a hand-off decided in sets records it in its own statement, so
  // this stage is 0 and the next holds the statement, its commit and the send) → the dial at the
  // carrier. Database and bench clocks are one machine's.
  const { rows: stageRows } = await pool.query(
    `SELECT h.i, extract(epoch FROM min(e.created_at)) * 1000 AS stored, extract(epoch FROM min(e.processed_at)) * 1000 AS processed,
            extract(epoch FROM (SELECT first_sent_at FROM call_command_sends s WHERE s.command_id = h.dial)) * 1000 AS claimed
       FROM jsonb_to_recordset($1::jsonb) AS h(i int, ids text[], dial text)
       JOIN carrier_events e ON e.carrier_event_id = ANY (h.ids)
      GROUP BY h.i, h.dial`,
    [JSON.stringify(handOffs.map((h, i) => ({ i, ids: h.eventIds, dial: h.dialCommandId })))],
  );
  const stage = (f) => stageRows.map((r) => f(r, handOffs[r.i])).filter(Number.isFinite);
  const stages = {
    stored: stage((r, h) => r.stored - h.sentAt),
    processed: stage((r) => r.processed - r.stored),
    claimed: stage((r) => r.claimed - r.processed),
    sent: stage((r, h) => h.dialAt - r.claimed),
  };
  const p = (values) => `${fmt(percentile(values, 50))} / ${fmt(percentile(values, 99))}`;
  const bridgedTwice = [...sessions.values()].filter((s) => s.bridged !== 1).length;
  console.log(`\n## Calls (${new Date().toISOString()})\nmachine: ${machine()}\ncommand: npm run bench:calls -- --calls ${CALLS} --ring-ms ${RING_MS} --warmup ${WARMUP} --rounds ${ROUNDS}${SMS_BURST > 0 ? ` --sms-burst ${SMS_BURST} --sms-rate ${SMS_RATE}` : ""}${spare ? ` --sigkill-after-ms ${SIGKILL_AFTER_MS}` : ''}\n`);
  console.log(`${WARMUP} warm-up calls (not counted), then ${ROUNDS} round(s) of ${CALLS} inbound calls at once, three-target plans, every leg hangup and answer delivered twice (two event ids, at once); targets 0 and 1 ring ${RING_MS} ms and time out, target 2 answers.\n`);
  console.log('| measure | value |\n|---|---|');
  console.log(`| carrier leg hangup → next dial issued, p50 / p99 (${latencies.length} hand-offs) | ${fmt(percentile(latencies, 50))} ms / ${fmt(percentile(latencies, 99))} ms |`);
  console.log(`| leg answered → bridge issued, p50 / p99 (${bridgeLatencies.length} calls) | ${p(bridgeLatencies)} ms |`);
  console.log(`| call start (caller's call.initiated) → first dial issued, p50 / p99 | ${p(firstDialLatencies)} ms |`);
  console.log(`| calls completed | ${completed} of ${CALLS * ROUNDS} in ${fmt(elapsed)} s |`);
  console.log(`| wrong dials (a target try dialed twice, or beyond the plan) | ${wrongDials} |`);
  console.log(`| legs dialed per call (min / max) | ${Math.min(...legsPerCall)} / ${Math.max(...legsPerCall)} |`);
  console.log(`| calls not bridged exactly once | ${bridgedTwice} |`);
  console.log(`| call_minutes usage rows / call.completed events (warm-up included: ${WARMUP + CALLS * ROUNDS} calls) | ${usage} / ${events} |`);
  console.log(`| (warm-up included) carrier events stored / retried for a call not recorded yet | ${carrierEvents} / ${retries} |`);
  console.log(`| jobs BullMQ had to run again (infrastructure errors: pool timeouts, deadlocks) | ${jobRetries} |`);
  console.log(`| pool connect timeouts / deadlocks in the app's log${spare ? ' (both processes)' : ''} / deadlocks PostgreSQL counted in this database | ${await troublesCell(spare ? [app, spare] : [app], pool)} |`);
  console.log(`| hand-off stages p50 / p99: hangup sent → stored | ${p(stages.stored)} ms |`);
  console.log(`| … stored → its processing began | ${p(stages.processed)} ms |`);
  console.log(`| … processing began → next dial's send recorded | ${p(stages.claimed)} ms |`);
  console.log(`| … send recorded → dial at the carrier | ${p(stages.sent)} ms |`);
  console.log(`| commands the carrier saw again under the same command_id (retries, done once) | ${retriedCommands} |`);
  if (spare) {
    const resumed = (list) => (list.length ? `${list.length}: ${fmt(percentile(list, 50))} / ${fmt(Math.max(...list))} ms` : '0');
    const env = JSON.parse(process.env.BENCH_APP_ENV ?? '{}');
    console.log(`| SIGKILL of the process handling the calls, ${SIGKILL_AFTER_MS} ms into the ${ROUNDS > 1 ? 'last ' : ''}round (after-commit lease ${env.WORKER_AFTER_COMMIT_GRACE_SECONDS ?? 'default, 6'} s); the carrier fails over to a second process | |`);
    console.log(`| … hand-offs the kill cut across: count: kill → next dial p50 / max | ${resumed(resumedAfterKill.handOff)} |`);
    console.log(`| … answers the kill cut across: count: kill → bridge p50 / max | ${resumed(resumedAfterKill.bridge)} |`);
    console.log(`| … call starts the kill cut across: count: kill → first dial p50 / max | ${resumed(resumedAfterKill.firstDial)} |`);
    // The dead process's work, by job: what the relay handed on after the kill (leases that ran
    // out, rows due and never taken), and how long after the kill it was relayed and done.
    const { rows: byJob } = await pool.query(
      `SELECT name, count(*)::int AS n,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM relayed_at) * 1000 - $1) AS relayed_p50,
              max(extract(epoch FROM relayed_at) * 1000 - $1)::float8 AS relayed_max,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at) * 1000 - $1) AS done_p50,
              max(extract(epoch FROM completed_at) * 1000 - $1)::float8 AS done_max
         FROM outbox_jobs WHERE created_at < to_timestamp($1 / 1000.0) AND relayed_at > to_timestamp($1 / 1000.0) AND redrive_at IS NOT NULL
        GROUP BY name ORDER BY name`,
      [killedWallAt],
    );
    for (const j of byJob) console.log(`| … ${j.name} jobs written before the kill, relayed after it: ${j.n}: kill → relayed p50 / max, kill → done p50 / max | ${fmt(j.relayed_p50)} / ${fmt(j.relayed_max)} ms, ${fmt(j.done_p50)} / ${fmt(j.done_max)} ms |`);
  }
  if (smsLoad) {
    console.log(`| SMS burst beside the last round: received by the endpoint (${values['sms-answer-ms']} ms answers) / offered / refused | ${smsRun.received} / ${smsRun.offered} / ${smsRun.rejected} |`);
    console.log(`| … SMS carrier webhook → customer webhook p50 / p99 | ${p(smsRun.latencies)} ms |`);
    console.log(`| GET /v2/messages during the burst p50 / p99 (${listLatencies.length} asked), non-2xx | ${p(listLatencies)} ms, ${listFailures} |`);
  }
  if (cpuBefore && cpuAfter) {
    const used = (key) => cpuAfter[key] - cpuBefore[key];
    const perEvent = (key) => fmt((used(key) * 1000) / eventsInRounds, 2);
    console.log(`| CPU in the measured rounds, app / PostgreSQL (this database's backends) / bench: seconds; ms per carrier event (${eventsInRounds} events in ${fmt(elapsed)} s) | ${fmt(used('app'), 2)} / ${fmt(used('postgres'), 2)} / ${fmt(used('bench'), 2)} s; ${perEvent('app')} / ${perEvent('postgres')} / ${perEvent('bench')} ms |`);
    if (smsCost) {
      const perCallEvent = ((used('app') + used('postgres')) * 1000) / eventsInRounds;
      const perSms = smsCostRun.received > 0 ? ((smsCost.app + smsCost.postgres) * 1000) / smsCostRun.received : NaN;
      console.log(`| inbound SMS end to end in the same run (${smsCostRun.received} of ${smsCostRun.offered} delivered to the customer endpoint, ${SMS_COST_RATE}/s, after the rounds): CPU app / PostgreSQL: seconds; ms per SMS | ${fmt(smsCost.app, 2)} / ${fmt(smsCost.postgres, 2)} s; ${fmt((smsCost.app * 1000) / smsCostRun.received, 2)} / ${fmt((smsCost.postgres * 1000) / smsCostRun.received, 2)} ms |`);
      console.log(`| CPU (app + PostgreSQL) per call event / per inbound SMS, and their ratio (goal ≤ 1.0) | ${fmt(perCallEvent, 2)} ms / ${fmt(perSms, 2)} ms = ${fmt(perCallEvent / perSms, 2)} |`);
      // Net of the idle CPU over each phase's length: the work itself.
      const netCallEvent = ((used('app') + used('postgres') - smsCost.idlePerSecond * elapsed) * 1000) / eventsInRounds;
      const netSms = ((smsCost.app + smsCost.postgres - smsCost.idlePerSecond * smsCost.seconds) * 1000) / smsCostRun.received;
      console.log(`| … net of the idle system's CPU (${fmt(smsCost.idlePerSecond * 1000, 0)} ms a second over each phase: ${fmt(elapsed)} s, ${fmt(smsCost.seconds)} s) | ${fmt(netCallEvent, 2)} ms / ${fmt(netSms, 2)} ms = ${fmt(netCallEvent / netSms, 2)} |`);
    }
  }
  if (wrongDials > 0 || completed < CALLS * ROUNDS) process.exitCode = 1;
  if (countFile) {
    const eventsMeasured = eventsInRounds;
    await pool.end();
    await app.stop();
    const after = smsCost ? countsAfterCalls : readCounts();
    const sent = Object.entries(after).map(([text, n]) => [text, n - (countsBefore[text] ?? 0)]).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
    const total = sent.reduce((sum, [, n]) => sum + n, 0);
    console.log(`| statements (round trips) the app sent in the measured rounds: all / per call / per carrier event | ${total} / ${fmt(total / (CALLS * ROUNDS))} / ${fmt(total / eventsMeasured)} |`);
    console.log('\nMost frequent statements in the measured rounds (first 100 characters):\n\n| count | statement |\n|---|---|');
    for (const [text, n] of sent.slice(0, 30)) console.log(`| ${n} | \`${text.replaceAll('|', '\\|')}\` |`);
    rmSync(countFile, { force: true });
  }
} finally {
  await pool.end().catch(() => undefined);
  await app.stop();
  await spare?.stop();
  await smsLoad?.close();
  await smsCostLoad?.close();
  telnyx.close();
  await db.drop();
}
