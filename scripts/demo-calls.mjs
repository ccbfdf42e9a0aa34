// The voice part of `npm run demo`: inbound calls through a three-target ring plan on the carrier
// sandbox's Telnyx Call Control, with chaos on every call webhook, then the same plan on a Twilio
// number through the sandbox's Twilio Voice (which requests our TwiML and follows it, every
// request sent three times at once); then the counts, and `onceline audit:calls` against the
// sandbox's own call log. DEMO_CALLS (default 5, per carrier).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './services.mjs';

export const CALL_CHAOS = 'duplicate=3,resign,reorder,delay_ms=100';
export const TWILIO_CALL_CHAOS = 'duplicate=3,resign,delay_ms=100';

/**
 * Runs the calls and returns the table rows ([what, expected, counted]) and whether every
 * per-call check held. `ctx`: { api, sandbox, say, until, randomNumber, number, receiverEvents, sub, env }.
 */
export async function runCallsDemo(ctx, calls) {
  const { api, sandbox, say, until, randomNumber, number } = ctx;
  const { declines, ringsOut, answers, previous, previousChaos, before } = await threeTargetPlan(ctx);
  const since = new Date().toISOString();
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
  const audit = await auditAgainstSandbox(ctx, since);
  const events = ctx.receiverEvents();
  const rows = [
    ['calls the carrier put through', calls, s.inbound],
    ['  dials: declining / ringing out / answering target', `${calls} / ${calls} / ${calls}`, `${s.dials.to[declines] ?? 0} / ${s.dials.to[ringsOut] ?? 0} / ${s.dials.to[answers] ?? 0}`],
    ['  legs dialed per call (calls with exactly 3)', calls, s.legs_per_call['3'] ?? 0],
    ['  wrong dials (after hangup, while another rang, after decline, left ringing)', 0, wrong],
    ['  commands the sandbox ignored as repeats (same command_id)', '', s.dials.replayed + s.commands.replayed],
    ['  bridges', calls, s.commands.by_action.bridge ?? 0],
    ['calls completed', calls, list.filter((c) => c.status === 'completed').length],
    ['call minutes billed (usage rows)', `${calls} (${calls})`, `${minutes} (${usage.length})`],
    ...['call.initiated', 'call.answered', 'call.completed', 'call.missed'].map((type) => [`  customer events ${type}`, type === 'call.missed' ? 0 : calls, countOf(events, type, list)]),
    ['audit:calls findings against the carrier log', 0, audit.findings],
  ];
  const checks = [list.every((c) => c.legs.length === 3 && c.billable_minutes === 1), usage.length === calls, audit.ok];
  return { rows, ok: checks.every(Boolean), chaos: `calls: ${CALL_CHAOS}`, since };
}

/**
 * The same three-target plan on the Twilio number, through the sandbox's Twilio Voice: each call
 * asks our URL for TwiML at every step. `auditSince`: the start of the Telnyx calls, so the audit
 * reads both carriers' lines of this run. `ctx` as for runCallsDemo, with `number` the Twilio one.
 */
export async function runTwilioCallsDemo(ctx, calls, auditSince) {
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
  const audit = await auditAgainstSandbox(ctx, auditSince);
  const rows = [
    ['Twilio Voice calls the carrier put through', calls, s.calls],
    ['  TwiML requests (3 copies of each step)', 3 * 4 * calls, s.requests],
    ['  copies answered with different TwiML', 0, s.mismatched_replies],
    ['  <Dial> followed / <Hangup/> followed', `${3 * calls} / ${calls}`, `${s.verbs.Dial ?? 0} / ${s.verbs.Hangup ?? 0}`],
    ['  calls with exactly 3 legs', calls, list.filter((c) => c.legs.length === 3).length],
    ['Twilio calls completed', calls, list.filter((c) => c.status === 'completed').length],
    ['Twilio call minutes billed (usage rows)', `${2 * calls} (${calls})`, `${minutes} (${usage.length})`],
    ['audit:calls findings, both carriers', 0, audit.findings],
  ];
  const checks = [s.mismatched_replies === 0, s.bad_replies === 0, list.every((c) => c.legs.length === 3 && c.billable_minutes === 2), usage.length === calls, audit.ok];
  return { rows, ok: checks.every(Boolean), chaos: `Twilio calls: ${TWILIO_CALL_CHAOS}` };
}

function countOf(events, type, calls) {
  const ids = new Set(calls.map((c) => c.id));
  return [...events.values()].filter((e) => e.type === type && ids.has(e.data.id)).length;
}

/** `onceline audit:calls` over the sandbox's call log of this run. */
async function auditAgainstSandbox(ctx, since) {
  const log = await (await fetch(`${ctx.sandboxUrl}/sandbox/calls/log?since=${encodeURIComponent(since)}`, { signal: AbortSignal.timeout(15000) })).text();
  const file = join(mkdtempSync(join(tmpdir(), 'onceline-demo-')), 'carrier-call-log.jsonl');
  writeFileSync(file, log);
  const run = spawnSync(process.execPath, ['dist/cli.js', 'audit:calls', '--carrier-log', file, '--json'], { cwd: ROOT, env: ctx.env, encoding: 'utf8' });
  try {
    const report = JSON.parse(run.stdout);
    return { ok: run.status === 0, findings: report.missing_here.length + report.missing_at_carrier.length + report.duration_mismatches.length + report.unanswered_here.length + report.invalid_lines.length };
  } catch {
    return { ok: false, findings: `audit failed: ${run.stderr.slice(0, 200)}` };
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
  // 0.02: a 20 s ring lasts 400 ms; the answering target picks up after 40 ms and talks 1.8 s.
  await sandbox('POST', '/sandbox/calls/behaviours', { time_scale: 0.02, [declines]: { decline: true }, [ringsOut]: { no_answer: true }, [answers]: { answer_after_ms: 2000, talk_ms: 90_000 } });
  const previousChaos = (await sandbox('GET', '/sandbox/chaos')).chaos;
  const before = await sandbox('GET', '/sandbox/stats');
  return { declines, ringsOut, answers, previous, previousChaos, before };
}
