// The voice part of `npm run demo`: inbound calls through a three-target ring plan on the carrier
// sandbox's Telnyx Call Control, with chaos on every call webhook, then the same plan on a Twilio
// number through the sandbox's Twilio Voice (which requests our TwiML and follows it, every
// request sent three times at once); then the counts, and `onceline audit:calls` against the
// sandbox's own call log. DEMO_CALLS (default 5, per carrier). Only this run's calls are checked:
// its account's, and the carrier's log lines of calls to its numbers, ended since it began; the
// minutes expected are what the carrier's durations come to, whatever the machine's speed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './services.mjs';

export const CALL_CHAOS = 'duplicate=3,resign,reorder,delay_ms=100';
export const TWILIO_CALL_CHAOS = 'duplicate=3,resign,delay_ms=100';

/**
 * Runs the calls and returns the table rows ([what, expected, counted]) and the named checks
 * ([what, ok]). `ctx`: { api, sandbox, say, until, randomNumber, number, receiverEvents, sub, env,
 * accountId, since (when the demo began), fetch (reads retried) }.
 */
export async function runCallsDemo(ctx, calls) {
  const { api, sandbox, say, until, randomNumber, number } = ctx;
  const { declines, ringsOut, answers, previous, previousChaos, before } = await threeTargetPlan(ctx);
  say(`${calls} inbound calls to ${number}: ${declines} declines, ${ringsOut} rings out, ${answers} answers; chaos ${CALL_CHAOS}`);
  try {
    await sandbox('POST', '/sandbox/chaos', { chaos: CALL_CHAOS });
    for (let i = 0; i < calls; i++) await sandbox('POST', '/sandbox/calls/inbound', { from: randomNumber(), to: number });
  } finally {
    await sandbox('POST', '/sandbox/chaos', { chaos: previousChaos }).catch(() => undefined);
  }
  const ours = async () => (await api('GET', '/v2/calls?direction=inbound&page[size]=250')).data.filter((c) => c.to === number);
  await until('the calls to end', async () => {
    const [list, stats] = await Promise.all([ours(), sandbox('GET', '/sandbox/stats')]);
    return list.length === calls && list.every((c) => c.ended_at) && stats.calls.live_legs === before.calls.live_legs && stats.webhooks.pending === 0;
  });
  await until('the call events to reach the receiver', async () => countOf(ctx.receiverEvents(), 'call.completed', await ours()) === calls);
  await sandbox('POST', '/sandbox/calls/behaviours', { time_scale: previous.time_scale, [declines]: null, [ringsOut]: null, [answers]: null }).catch(() => undefined);

  const list = await ours();
  const s = ctx.sub(await sandbox('GET', '/sandbox/stats'), before).calls;
  const wrong = s.dials.after_caller_hangup + s.dials.while_another_rings + s.dials.after_decline + s.dials.left_ringing;
  const minutes = list.reduce((n, c) => n + (c.billable_minutes ?? 0), 0);
  const usage = (await api('GET', '/v2/usage/records?page[size]=250')).data.filter((u) => u.kind === 'call_minutes' && list.some((c) => c.id === u.resource_id));
  const audit = await auditAgainstSandbox(ctx, [number]);
  const events = ctx.receiverEvents();
  const rows = [
    ['calls the carrier put through', calls, s.inbound],
    ['  dials: declining / ringing out / answering target', `${calls} / ${calls} / ${calls}`, `${s.dials.to[declines] ?? 0} / ${s.dials.to[ringsOut] ?? 0} / ${s.dials.to[answers] ?? 0}`],
    ['  legs dialed per call (calls with exactly 3)', calls, s.legs_per_call['3'] ?? 0],
    ['  wrong dials (after hangup, while another rang, after decline, left ringing)', 0, wrong],
    ['  commands the sandbox ignored as repeats (same command_id)', '', s.dials.replayed + s.commands.replayed],
    ['  bridges', calls, s.commands.by_action.bridge ?? 0],
    ['calls completed', calls, list.filter((c) => c.status === 'completed').length],
    ['call minutes billed (usage rows), as the carrier\'s durations say', `${audit.minutes} (${calls})`, `${minutes} (${usage.length})`],
    ...['call.initiated', 'call.answered', 'call.completed', 'call.missed'].map((type) => [`  customer events ${type}`, type === 'call.missed' ? 0 : calls, countOf(events, type, list)]),
    ['audit:calls findings against the carrier log', 0, audit.findings],
  ];
  const checks = [
    ['every Telnyx call has 3 legs', list.every((c) => c.legs.length === 3)],
    ['one usage row per Telnyx call', usage.length === calls],
    ['audit:calls (Telnyx)', audit.ok],
  ];
  return { rows, checks, findings: audit.lines, chaos: `calls: ${CALL_CHAOS}` };
}

/**
 * The same three-target plan on the Twilio number, through the sandbox's Twilio Voice: each call
 * asks our URL for TwiML at every step. `ctx` as for runCallsDemo, with `number` the Twilio one;
 * `telnyxNumber`: the audit then reads both carriers' lines of this run.
 */
export async function runTwilioCallsDemo(ctx, calls, telnyxNumber) {
  const { api, sandbox, say, until, randomNumber, number } = ctx;
  const { declines, ringsOut, answers, previous, previousChaos, before } = await threeTargetPlan(ctx);
  say(`${calls} Twilio Voice calls to ${number} (TwiML in the request): ${declines} declines, ${ringsOut} rings out, ${answers} answers; chaos ${TWILIO_CALL_CHAOS}`);
  try {
    await sandbox('POST', '/sandbox/chaos', { chaos: TWILIO_CALL_CHAOS });
    for (let i = 0; i < calls; i++) await sandbox('POST', '/sandbox/calls/inbound', { from: randomNumber(), to: number, carrier: 'twilio' });
  } finally {
    await sandbox('POST', '/sandbox/chaos', { chaos: previousChaos }).catch(() => undefined);
  }
  const ours = async () => (await api('GET', '/v2/calls?direction=inbound&page[size]=250')).data.filter((c) => c.to === number);
  await until('the Twilio calls to end', async () => {
    const [list, stats] = await Promise.all([ours(), sandbox('GET', '/sandbox/stats')]);
    return list.length === calls && list.every((c) => c.ended_at) && stats.webhooks.pending === 0;
  });
  await until('the Twilio call events to reach the receiver', async () => countOf(ctx.receiverEvents(), 'call.completed', await ours()) === calls);
  await sandbox('POST', '/sandbox/calls/behaviours', { time_scale: previous.time_scale, [declines]: null, [ringsOut]: null, [answers]: null }).catch(() => undefined);

  const list = await ours();
  const s = ctx.sub(await sandbox('GET', '/sandbox/stats'), before).twilio_voice;
  const minutes = list.reduce((n, c) => n + (c.billable_minutes ?? 0), 0);
  const usage = (await api('GET', '/v2/usage/records?page[size]=250')).data.filter((u) => u.kind === 'call_minutes' && list.some((c) => c.id === u.resource_id));
  const audit = await auditAgainstSandbox(ctx, [telnyxNumber, number]);
  const twilioMinutes = audit.minutesTo(number);
  const rows = [
    ['Twilio Voice calls the carrier put through', calls, s.calls],
    // at least 3 copies of 4 steps per call: a copy the app answered 503 (busy machine) is retried
    ['  TwiML requests (3 copies of each step, retries included)', '', s.requests],
    ['  copies answered with different TwiML', 0, s.mismatched_replies],
    ['  <Dial> followed / <Hangup/> followed', `${3 * calls} / ${calls}`, `${s.verbs.Dial ?? 0} / ${s.verbs.Hangup ?? 0}`],
    ['  calls with exactly 3 legs', calls, list.filter((c) => c.legs.length === 3).length],
    ['Twilio calls completed', calls, list.filter((c) => c.status === 'completed').length],
    ['Twilio call minutes billed (usage rows), as the carrier\'s durations say', `${twilioMinutes} (${calls})`, `${minutes} (${usage.length})`],
    ['audit:calls findings, both carriers', 0, audit.findings],
  ];
  const checks = [
    ['Twilio TwiML requests: 3 copies of each of 4 steps at least', s.requests >= 3 * 4 * calls],
    ['Twilio copies answered alike', s.mismatched_replies === 0 && s.bad_replies === 0],
    ['every Twilio call has 3 legs', list.every((c) => c.legs.length === 3)],
    ['one usage row per Twilio call', usage.length === calls],
    ['audit:calls (both carriers)', audit.ok],
  ];
  return { rows, checks, findings: audit.lines, chaos: `Twilio calls: ${TWILIO_CALL_CHAOS}` };
}

function countOf(events, type, calls) {
  const ids = new Set(calls.map((c) => c.id));
  return [...events.values()].filter((e) => e.type === type && ids.has(e.data.id)).length;
}

/** Minutes a call of `duration_secs` is billed: ceil(duration / 60), at least 1 once answered. */
const billedMinutes = (line) => (line.status === 'completed' ? Math.max(1, Math.ceil(line.duration_secs / 60)) : 0);

/**
 * `onceline audit:calls` over the sandbox's call log lines of this run: calls to `numbers` that
 * ended since the demo began, against this account's calls ended since then. Returns the findings
 * by name and the minutes the carrier's durations come to (per number called).
 */
async function auditAgainstSandbox(ctx, numbers) {
  const text = await (await ctx.fetch(`${ctx.sandboxUrl}/sandbox/calls/log?since=${encodeURIComponent(ctx.since)}`, { signal: AbortSignal.timeout(15000) })).text();
  const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => numbers.includes(l.to));
  const minutesTo = (number) => lines.filter((l) => l.to === number).reduce((n, l) => n + billedMinutes(l), 0);
  const dir = mkdtempSync(join(tmpdir(), 'onceline-demo-'));
  try {
    const file = join(dir, 'carrier-call-log.jsonl');
    writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    const args = ['dist/cli.js', 'audit:calls', '--carrier-log', file, '--since', ctx.since, '--account', ctx.accountId, '--json'];
    const run = spawnSync(process.execPath, args, { cwd: ROOT, env: ctx.env, encoding: 'utf8' });
    let report;
    try {
      report = JSON.parse(run.stdout);
    } catch {
      return { ok: false, findings: 'audit failed', lines: [`audit:calls failed: ${run.stderr.slice(0, 300)}`], minutes: minutesTo(numbers.at(-1)), minutesTo };
    }
    if (report.errors) return { ok: false, findings: 'audit failed', lines: report.errors.map((e) => `audit:calls: ${e.title}: ${e.detail ?? ''}`), minutes: minutesTo(numbers.at(-1)), minutesTo };
    const named = [
      ...report.missing_here.map((m) => `audit:calls missing here: the carrier ${m.status} call ${m.carrier_call_id}, we have no call`),
      ...report.missing_at_carrier.map((m) => `audit:calls missing at the carrier: our call ${m.call_id} (${m.carrier_call_id}, ${m.status})`),
      ...report.duration_mismatches.map((m) => `audit:calls duration: our call ${m.call_id} ${m.ours} s, the carrier ${m.carrier} s`),
      ...report.unanswered_here.map((m) => `audit:calls unanswered here: our call ${m.call_id} (${m.carrier_call_id}) is ${m.status}, the carrier billed ${m.carrier_duration} s`),
      ...report.invalid_lines.map((n) => `audit:calls: carrier log line ${n} unreadable`),
    ];
    return { ok: run.status === 0, findings: named.length, lines: named, minutes: minutesTo(numbers.at(-1)), minutesTo };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The number's plan (a target that declines, one that rings out, one that answers) and the
 * sandbox's behaviours for them; returns the three targets and the sandbox settings and stats to
 * restore and compare against.
 */
async function threeTargetPlan({ api, sandbox, randomNumber, number }) {
  const [declines, ringsOut, answers] = [randomNumber(), randomNumber(), randomNumber()];
  const numberId = (await api('GET', '/v2/phone_numbers')).data.find((n) => n.phone_number === number).id;
  await api('PATCH', `/v2/phone_numbers/${numberId}`, {
    voice: { ring_plan: { targets: [{ to: declines }, { to: ringsOut, timeout_secs: 20 }, { to: answers }], fallback: { action: 'hangup' } } },
  });
  const previous = await sandbox('GET', '/sandbox/calls/behaviours');
  // 0.02: a 20 s ring lasts 400 ms; the answering target picks up after 40 ms and talks 8 s of
  // real time: long enough for the app's bridge to reach it on a busy machine (a target that hung
  // up first would leave a call answered but never bridged), short enough to bill one minute.
  await sandbox('POST', '/sandbox/calls/behaviours', { time_scale: 0.02, [declines]: { decline: true }, [ringsOut]: { no_answer: true }, [answers]: { answer_after_ms: 2000, talk_ms: 400_000 } });
  const previousChaos = (await sandbox('GET', '/sandbox/chaos')).chaos;
  const before = await sandbox('GET', '/sandbox/stats');
  return { declines, ringsOut, answers, previous, previousChaos, before };
}
