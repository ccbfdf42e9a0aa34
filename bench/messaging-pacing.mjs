// bench/messaging-pacing.mjs — sender pacing. The real app (`node dist/main.js all`) on a fresh
// database sends through a local fake carrier that enforces each sending number's throughput (the
// sandbox's own token bucket: 429 + Retry-After past it) and records when each send arrives.
// Phase 1: only "quiet" numbers, each sending well under its rate. Phase 2: the same quiet
// traffic beside a burst to a number far under its rate (the burst's own load). Phase 3: the same
// quiet traffic while the same burst to one paced number drains at its rate. Reports the paced number's throughput against
// its rate, carrier 429s and doubles, and the quiet numbers' accept → carrier latency in both
// phases (pacing one number should cost the others nothing). Loopback only, bounded in time.
// `--phases` runs only some of them, in this order (e.g. `--phases unpaced`: the quiet numbers beside
// a burst to a number far under its rate, which pacing must not slow).
// Phase `bursts` (issue #42): --bursts numbers each get 20 messages at once at --burst-rate/s; each
// burst's span at the carrier against 19 spacings (the pacing error) and its smallest gap.
// Phase `keywords` (issue #42, run last: it leaves its backlog unsent): --backlog messages queued on
// one number at --keyword-rate/s; once the number sends at its full rate (>= 95 % over 5 s: a
// number below it has room for a reply at once, which proves nothing), --keywords STOP/HELP
// keywords (alternating, a few seconds apart, from handsets the backlog sends to); the time from
// each keyword's webhook answered to its reply's arrival at the carrier (p50, p99, max; the issue's
// goal: p99 <= 5 s), and the number's measured rate before and over the keywords' window.
// Usage: npm run bench:pacing [-- --rate 20 --burst 300 --quiet-numbers 10 --quiet-rate 2 --seconds 10 --phases alone,unpaced,paced,bursts,keywords
//        --bursts 5 --burst-rate 2 --backlog 10000 --keyword-rate 20 --keywords 8]
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SenderThroughput } from '../dist/lib/sandbox/sender-throughput.js';
import { messageIdFromUrl } from '../dist/lib/carriers/message-sender.js';
// The default replies, as the carrier sees them (the keywords phase finds each keyword's reply by its text).
import { DEFAULT_KEYWORD_REPLIES } from '../dist/lib/modules/messaging/opt-out-keywords.js';
import { createAccountWithNumber, fmt, freePort, freshDatabase, machine, percentile, REDIS_URL, request, ROOT, startRole, telnyxHeaders, telnyxKeyPair } from './lib.mjs';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '20' },
    burst: { type: 'string', default: '300' },
    'quiet-numbers': { type: 'string', default: '10' },
    'quiet-rate': { type: 'string', default: '2' },
    seconds: { type: 'string', default: '10' },
    phases: { type: 'string', default: 'alone,unpaced,paced' },
    bursts: { type: 'string', default: '5' },
    'burst-rate': { type: 'string', default: '2' },
    backlog: { type: 'string', default: '10000' },
    'keyword-rate': { type: 'string', default: '20' },
    keywords: { type: 'string', default: '8' },
  },
});
const PHASE_NAMES = ['alone', 'unpaced', 'paced', 'bursts', 'keywords'];
const PHASES = new Set(values.phases.split(','));
for (const p of PHASES) if (!PHASE_NAMES.includes(p)) throw new Error(`--phases: unknown phase ${p} (${PHASE_NAMES.join(', ')})`);
const BURSTS = Number(values.bursts);
/** The keywords phase: how long the backlog's number must have sent at (95 % of) its rate before the first keyword, and how long to wait for that. */
const SATURATION_WINDOW_MS = 5000;
const SATURATION_TIMEOUT_MS = 300_000;
const BURST_RATE = Number(values['burst-rate']);
/** Messages per burst in the `bursts` phase (the issue's 20-message burst). */
const BURST_SIZE = 20;
const BACKLOG = Number(values.backlog);
const KEYWORD_RATE = Number(values['keyword-rate']);
const KEYWORDS = Number(values.keywords);
const RATE = Number(values.rate);
const BURST = Number(values.burst);
const QUIET_NUMBERS = Number(values['quiet-numbers']);
const QUIET_RATE = Number(values['quiet-rate']);
const SECONDS = Number(values.seconds);
/** The quiet numbers' own rate: five times what they send. */
const QUIET_LIMIT = QUIET_RATE * 5;

const PACED = '+15550110000';
/** A burst of the same size to a number whose rate is far above it (1000/s, no carrier limit): the comparison. */
const UNPACED = '+15550110001';
const QUIET = Array.from({ length: QUIET_NUMBERS }, (_, i) => `+1555012${String(i).padStart(4, '0')}`);
const HANDSET = '+15550199999';
const BURST_NUMBERS = Array.from({ length: BURSTS }, (_, i) => `+1555013${String(i).padStart(4, '0')}`);
const KEYWORD_NUMBER = '+15550110002';
/** The backlog's handsets: the keywords come from some of them (a STOP refuses what is queued to its handset). */
const BACKLOG_HANDSETS = Array.from({ length: 100 }, (_, i) => `+1555014${String(i).padStart(4, '0')}`);
const { privateKey, publicKeyBase64 } = telnyxKeyPair();

// The carrier: each number's limit as the sandbox enforces it; arrivals by message id.
const limits = new SenderThroughput(0);
limits.numbers.set(PACED, RATE);
for (const n of QUIET) limits.numbers.set(n, QUIET_LIMIT);
for (const n of BURST_NUMBERS) limits.numbers.set(n, BURST_RATE);
limits.numbers.set(KEYWORD_NUMBER, KEYWORD_RATE);
const arrivals = new Map(); // our message id → [ms]
const sends = []; // { from, to, text, at } of every send the carrier took
const throttled = new Map(); // number → 429s
const carrier = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const { from, to, text, webhook_url: webhookUrl } = JSON.parse(body);
    // Our message id, as the send's webhook_url names it (the Telnyx sender sends no Idempotency-Key: Telnyx declares none).
    const id = String(messageIdFromUrl(webhookUrl));
    const retryAfter = limits.take(from, 1);
    if (retryAfter !== undefined) {
      throttled.set(from, (throttled.get(from) ?? 0) + 1);
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(retryAfter) });
      return res.end(JSON.stringify({ errors: [{ code: '10010', title: 'Too many requests' }] }));
    }
    arrivals.set(id, [...(arrivals.get(id) ?? []), performance.now()]);
    sends.push({ from, to, text, at: performance.now() });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: { id: randomUUID(), record_type: 'message', text } }));
  });
});
await new Promise((r) => carrier.listen(0, '127.0.0.1', r));

const db = await freshDatabase('onceline_bench_pacing');
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  DATABASE_URL: db.url,
  REDIS_URL,
  QUEUE_PREFIX: `benchpace${port}`,
  PORT: String(port),
  LOG_LEVEL: 'error',
  TELNYX_API_URL: `http://127.0.0.1:${carrier.address().port}/v2`,
  API_RATE_LIMIT_PER_MINUTE: '100000000',
  TELNYX_PUBLIC_KEY: publicKeyBase64,
  WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
};
const app = await startRole('all', env, { readyUrl: `${base}/health/ready` });
const pool = new pg.Pool({ connectionString: db.url, max: 2 });

try {
  const { account, auth } = await createAccountWithNumber(base, env, { phoneNumber: PACED, carrier: 'telnyx' });
  for (const n of [UNPACED, ...QUIET, ...BURST_NUMBERS, KEYWORD_NUMBER]) {
    execFileSync(process.execPath, ['dist/cli.js', 'numbers:assign', '--account', account.account.id, '--number', n, '--carrier', 'telnyx', '--json'], { cwd: ROOT, env: { ...process.env, ...env } });
  }
  const numbers = JSON.parse((await request(`${base}/v2/phone_numbers?page[size]=250`, { headers: auth })).body).data;
  for (const n of numbers) {
    const rate = limits.numbers.get(n.phone_number) ?? 1000;
    const res = await request(`${base}/v2/phone_numbers/${n.id}`, { method: 'PATCH', headers: auth, body: JSON.stringify({ messaging: { send_rate_per_second: rate } }) });
    if (res.status !== 200) throw new Error(`PATCH rate of ${n.phone_number}: ${res.status} ${res.body}`);
  }

  const posted = new Map(); // message id → ms
  const post = async (from, text, to = HANDSET) => {
    const t0 = performance.now();
    const res = await request(`${base}/v2/messages`, { method: 'POST', headers: auth, body: JSON.stringify({ from, to, text }) });
    if (res.status !== 202) throw new Error(`POST /v2/messages: ${res.status} ${res.body}`);
    const { id } = JSON.parse(res.body).data;
    posted.set(id, t0);
    return id;
  };
  /** Each quiet number sends QUIET_RATE a second, evenly, for `seconds`. */
  const quietTraffic = async (seconds, label) => {
    const ids = [];
    const start = performance.now();
    const total = Math.round(seconds * QUIET_RATE);
    await Promise.all(
      QUIET.map(async (from, k) => {
        for (let i = 0; i < total; i++) {
          const due = start + ((i + k / QUIET.length) * 1000) / QUIET_RATE;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          ids.push(await post(from, `${label} ${i}`));
        }
      }),
    );
    return ids;
  };
  const arrived = async (ids, timeoutMs) => {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until && ids.some((id) => !arrivals.has(id))) await new Promise((r) => setTimeout(r, 100));
    return ids.filter((id) => arrivals.has(id)).length;
  };
  const latencies = (ids) => ids.filter((id) => arrivals.has(id)).map((id) => arrivals.get(id)[0] - posted.get(id));
  const waitedForSlot = async (ids) =>
    Number((await pool.query(`SELECT count(DISTINCT data->>'messageId') FROM outbox_jobs WHERE job_id LIKE 'dispatch-%-at-%' AND data->>'messageId' = ANY($1)`, [ids])).rows[0].count);

  // Phase 1: quiet numbers alone.
  const quiet1 = PHASES.has('alone') ? await quietTraffic(SECONDS, 'quiet alone') : [];
  await arrived(quiet1, 30_000);

  /** A burst to `from`, posted as fast as 32 connections go, beside the same quiet traffic; waits for all of it. */
  const beside = async (from, seconds) => {
    const burstIds = [];
    const burstPosting = (async () => {
      let next = 0;
      await Promise.all(Array.from({ length: 32 }, async () => {
        while (next < BURST) {
          const i = next++;
          burstIds.push(await post(from, `burst ${i}`));
        }
      }));
    })();
    const quietIds = await quietTraffic(seconds, `quiet beside a burst from ${from}`);
    await burstPosting;
    await arrived([...burstIds, ...quietIds], (BURST / RATE) * 1000 * 3 + 60_000);
    return { burstIds, quietIds };
  };
  // Phase 2: beside a burst that is not paced (the load of the burst itself); phase 3: beside the paced burst.
  const drainSeconds0 = Math.max(SECONDS, BURST / RATE);
  const unpaced = PHASES.has('unpaced') ? await beside(UNPACED, drainSeconds0) : undefined;
  const { burstIds, quietIds: quiet2 } = PHASES.has('paced') ? await beside(PACED, drainSeconds0) : { burstIds: [], quietIds: [] };

  const burstTimes = burstIds.filter((id) => arrivals.has(id)).map((id) => arrivals.get(id)[0]).sort((a, b) => a - b);
  const drainSeconds = (burstTimes.at(-1) - burstTimes[0]) / 1000;
  const doubles = [...arrivals.values()].filter((a) => a.length > 1).length;
  // The most arrivals from the paced number in any one second (the relay hands due jobs over every OUTBOX_POLL_MS, so sends bunch a little).
  let busiestSecond = 0;
  for (let i = 0, j = 0; i < burstTimes.length; i++) {
    while (burstTimes[i] - burstTimes[j] >= 1000) j++;
    busiestSecond = Math.max(busiestSecond, i - j + 1);
  }
  const slots = (await pool.query(
    `SELECT min(gap) AS min_gap, max(gap) AS max_gap FROM (SELECT extract(epoch FROM send_slot - lag(send_slot) OVER (ORDER BY send_slot))::float8 AS gap FROM messages WHERE id = ANY($1)) s`,
    [burstIds],
  )).rows[0];
  const row = (label, ids, waited) => {
    const l = latencies(ids);
    return `| ${label} | ${ids.length} | ${l.length} | ${fmt(percentile(l, 50))} | ${fmt(percentile(l, 99))} | ${waited} |`;
  };

  console.log(`\n## Sender pacing (${new Date().toISOString()})\nmachine: ${machine()}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(', ')} at the report (other processes on the machine slow the relay and workers: compare runs under a like load)\ncommand: npm run bench:pacing -- --rate ${RATE} --burst ${BURST} --quiet-numbers ${QUIET_NUMBERS} --quiet-rate ${QUIET_RATE} --seconds ${SECONDS} --phases ${values.phases} --bursts ${BURSTS} --burst-rate ${BURST_RATE} --backlog ${BACKLOG} --keyword-rate ${KEYWORD_RATE} --keywords ${KEYWORDS}\n`);
  if (PHASES.has('paced')) {
    console.log(`paced number: ${BURST} messages posted at once, rate ${RATE}/s: ${burstTimes.length} arrived over ${fmt(drainSeconds, 2)} s = ${fmt((burstTimes.length - 1) / drainSeconds, 2)} messages/s at the carrier (expected ${RATE}); send slots ${fmt(slots.min_gap * 1000, 1)} to ${fmt(slots.max_gap * 1000, 1)} ms apart (1/rate = ${fmt(1000 / RATE, 1)} ms)`);
    console.log(`most arrivals from the paced number in any 1 s: ${busiestSecond} (rate ${RATE})`);
  }
  console.log(`carrier 429s: paced ${throttled.get(PACED) ?? 0}, quiet ${QUIET.reduce((s, n) => s + (throttled.get(n) ?? 0), 0)}; doubles (a message arriving twice): ${doubles}\n`);
  if (['alone', 'unpaced', 'paced'].some((p) => PHASES.has(p))) console.log(`| quiet numbers (${QUIET_NUMBERS}, each ${QUIET_RATE}/s, limit ${QUIET_LIMIT}/s) | posted | arrived | accept → carrier p50 ms | p99 ms | waited for a slot |\n|---|---|---|---|---|---|`);
  if (PHASES.has('alone')) console.log(row('alone', quiet1, await waitedForSlot(quiet1)));
  if (unpaced) {
    console.log(row(`beside a burst of ${BURST} to a number at 1000/s (not paced)`, unpaced.quietIds, await waitedForSlot(unpaced.quietIds)));
    console.log(row(`(the burst of ${BURST} itself, at 1000/s)`, unpaced.burstIds, await waitedForSlot(unpaced.burstIds)));
  }
  if (PHASES.has('paced')) console.log(row(`beside the burst of ${BURST} paced at ${RATE}/s`, quiet2, await waitedForSlot(quiet2)));

  if (PHASES.has('bursts')) {
    // Each number gets its 20 at once, all numbers together; the carrier's clock reads the arrivals.
    const perNumber = await Promise.all(BURST_NUMBERS.map(async (from) => {
      const ids = [];
      for (let i = 0; i < BURST_SIZE; i++) ids.push(await post(from, `paced burst ${i}`));
      return ids;
    }));
    await arrived(perNumber.flat(), (BURST_SIZE / BURST_RATE) * 1000 * 3 + 30_000);
    const ideal = ((BURST_SIZE - 1) * 1000) / BURST_RATE;
    console.log(`\n| burst of ${BURST_SIZE} at ${BURST_RATE}/s (ideal span ${fmt(ideal / 1000, 2)} s) | arrived | span s | pacing error | smallest gap ms | carrier 429s |\n|---|---|---|---|---|---|`);
    const errors = [];
    BURST_NUMBERS.forEach((from, i) => {
      const times = perNumber[i].filter((id) => arrivals.has(id)).map((id) => arrivals.get(id)[0]).sort((a, b) => a - b);
      const span = times.at(-1) - times[0];
      const gaps = times.slice(1).map((t, k) => t - times[k]);
      errors.push((span - ideal) / ideal);
      console.log(`| ${from} | ${times.length} | ${fmt(span / 1000, 2)} | ${fmt(((span - ideal) / ideal) * 100, 1)} % | ${fmt(Math.min(...gaps), 0)} | ${throttled.get(from) ?? 0} |`);
    });
    console.log(`pacing error over ${BURSTS} bursts: mean ${fmt((errors.reduce((a, b) => a + b, 0) / errors.length) * 100, 1)} %, worst ${fmt(Math.max(...errors.map(Math.abs)) * 100, 1)} % (goal: within 5 %, never faster)`);
  }

  if (PHASES.has('keywords')) {
    // The backlog: BACKLOG messages to BACKLOG_HANDSETS in turn, posted as fast as 32 connections go.
    const postedAt = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (next < BACKLOG) {
        const i = next++;
        await post(KEYWORD_NUMBER, `campaign ${i}`, BACKLOG_HANDSETS[i % BACKLOG_HANDSETS.length]);
      }
    }));
    const backlogSeconds = (performance.now() - postedAt) / 1000;
    // The figure proves something only while the number sends at its full rate (a number below it
    // has room for a reply at once): wait until it has sent at >= 95 % of its rate over the last
    // SATURATION_WINDOW_MS, and report its rate over the keywords' own window below.
    const numberSends = () => sends.filter((s) => s.from === KEYWORD_NUMBER).map((s) => s.at);
    const rateOver = (from, to) => numberSends().filter((t) => t >= from && t < to).length / ((to - from) / 1000);
    const saturatedFrom = performance.now();
    while (performance.now() - saturatedFrom < SATURATION_TIMEOUT_MS && rateOver(performance.now() - SATURATION_WINDOW_MS, performance.now()) < 0.95 * KEYWORD_RATE) {
      await new Promise((r) => setTimeout(r, 250));
    }
    const saturationWaitSeconds = (performance.now() - saturatedFrom) / 1000;
    // The keywords, a few seconds apart, while the backlog drains: STOP, HELP, STOP, ... each from a handset of its own.
    const asked = [];
    for (let k = 0; k < KEYWORDS; k++) {
      const word = k % 2 === 0 ? 'STOP' : 'HELP';
      const handset = BACKLOG_HANDSETS[k];
      const body = JSON.stringify({
        data: { event_type: 'message.received', id: randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event',
          payload: { id: randomUUID(), record_type: 'message', direction: 'inbound', type: 'SMS', from: { phone_number: handset }, to: [{ phone_number: KEYWORD_NUMBER }], text: word, media: [], parts: 1, errors: [] } },
        meta: { attempt: 1, delivered_to: `${base}/webhooks/telnyx` },
      });
      const res = await request(`${base}/webhooks/telnyx`, { method: 'POST', headers: telnyxHeaders(privateKey, body), body });
      if (res.status !== 200) throw new Error(`keyword webhook: ${res.status} ${res.body}`);
      asked.push({ word, handset, at: performance.now(), reply: word === 'STOP' ? DEFAULT_KEYWORD_REPLIES.opt_out : DEFAULT_KEYWORD_REPLIES.help });
      await new Promise((r) => setTimeout(r, 2500));
    }
    const until = Date.now() + 60_000;
    const replyOf = (a) => sends.find((s) => s.from === KEYWORD_NUMBER && s.to === a.handset && s.text === a.reply && s.at >= a.at);
    while (Date.now() < until && asked.some((a) => !replyOf(a))) await new Promise((r) => setTimeout(r, 100));
    const waits = asked.map((a) => (replyOf(a) ? replyOf(a).at - a.at : Infinity));
    const sentMeanwhile = sends.filter((s) => s.from === KEYWORD_NUMBER).length;
    // The keywords' window: from the first keyword to the last reply (or the last keyword's wait); its rate overall and its slowest second.
    const windowFrom = asked[0].at;
    const windowTo = Math.max(...asked.map((a, i) => a.at + (Number.isFinite(waits[i]) ? waits[i] : 0)), asked.at(-1).at + 1000);
    const seconds = Array.from({ length: Math.floor((windowTo - windowFrom) / 1000) }, (_, i) => rateOver(windowFrom + i * 1000, windowFrom + (i + 1) * 1000));
    const unsent = Number((await pool.query(`SELECT count(*) FROM messages WHERE from_number = $1 AND direction = 'outbound' AND status IN ('queued', 'scheduled')`, [KEYWORD_NUMBER])).rows[0].count);
    console.log(`\nkeywords: ${BACKLOG} messages queued on one number at ${KEYWORD_RATE}/s (posted in ${fmt(backlogSeconds, 1)} s; ${sentMeanwhile} sent by the end), then ${KEYWORDS} keywords (STOP/HELP alternating, 2.5 s apart)`);
    console.log(`while the backlog was posted the number sent ${fmt(rateOver(postedAt, postedAt + backlogSeconds * 1000), 2)}/s (its first dispatch runs, one per message, each giving a slot, queued ahead of the slots' jobs)`);
    console.log(`saturation: the number reached ${fmt(rateOver(windowFrom - SATURATION_WINDOW_MS, windowFrom), 2)}/s over the ${SATURATION_WINDOW_MS / 1000} s before the first keyword (${fmt(saturationWaitSeconds, 1)} s after the backlog was posted); over the keywords' window (${fmt((windowTo - windowFrom) / 1000, 1)} s) ${fmt(rateOver(windowFrom, windowTo), 2)}/s (the replies among them: they count toward the rate), slowest second ${fmt(Math.min(...seconds), 0)} sends (rate ${KEYWORD_RATE}/s); still waiting at the end: ${unsent}`);
    console.log(`keyword → reply at the carrier: p50 ${fmt(percentile(waits, 50))} ms, p99 ${fmt(percentile(waits, 99))} ms, max ${fmt(Math.max(...waits))} ms; replies missing after 60 s: ${waits.filter((w) => w === Infinity).length} (goal: p99 <= 5000 ms)`);
    console.log(`each (ms): ${asked.map((a, i) => `${a.word} ${fmt(waits[i])}`).join(', ')}; carrier 429s on that number: ${throttled.get(KEYWORD_NUMBER) ?? 0}`);
  }
} finally {
  await pool.end();
  await app.stop();
  carrier.close();
  await db.drop();
}
