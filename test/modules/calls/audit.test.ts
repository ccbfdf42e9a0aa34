import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { withTestApp } from '../../support/with-test-app.js';
import { runCliHere } from '../../support/run-cli.js';

describe('audit:calls --carrier-log: our calls beside the carrier\'s call log', () => {
  const t = withTestApp({ http: false });

  /** An inbound call answered at `answeredAt` and ended `seconds` later (or never answered: ended `missed` then), through the real transitions. */
  async function endedCall(accountId: string, session: string, answeredAt: number, seconds: number | 'unanswered'): Promise<string> {
    const transitions = t.app.app.get(CallTransitions);
    return t.app.app.get(UnitOfWork).run(async (tx) => {
      const call = (await transitions.create(tx, { accountId, direction: 'inbound', from: '+15550000001', to: '+15550000002', carrier: 'telnyx', carrierCallId: session, callerControlId: `v3:${session}`, transcribe: false, status: 'ringing' }))!;
      if (seconds === 'unanswered') {
        await transitions.end(tx, call.id, new Date(answeredAt + 20_000).toISOString(), 'originator_cancel');
        return call.id;
      }
      await transitions.answerOwnLeg(tx, call.id, new Date(answeredAt).toISOString());
      await transitions.end(tx, call.id, new Date(answeredAt + seconds * 1000).toISOString(), 'normal_clearing');
      return call.id;
    });
  }

  it('reports a carrier-only call, a call missing from the carrier log, a duration mismatch and a billed call we recorded missed, each once; exit 1', async () => {
    const { account } = await t.app.app.get(AccountsService).createAccount('audit');
    const t0 = Date.now() - 600_000;
    const matching = await endedCall(account.id, 'sess-match', t0, 61);
    const mismatched = await endedCall(account.id, 'sess-mismatch', t0, 61);
    const unlisted = await endedCall(account.id, 'sess-unlisted', t0, 30);
    // a leg answered and dropped, and we wrote the call off as missed: the carrier billed it (issue 24)
    const missedHere = await endedCall(account.id, 'sess-missed-here', t0, 'unanswered');
    const missedBoth = await endedCall(account.id, 'sess-missed-both', t0, 'unanswered');
    const iso = (ms: number) => new Date(ms).toISOString();
    const log = [
      { call_session_id: 'sess-match', status: 'completed', start_time: iso(t0 - 5000), end_time: iso(t0 + 61_000), duration_secs: 63 },
      { call_session_id: 'sess-mismatch', status: 'completed', start_time: iso(t0), end_time: iso(t0 + 90_000), duration_secs: 90 },
      // listed twice (the carrier's log repeats a call it re-rated): still one finding
      { call_session_id: 'sess-carrier-only', status: 'completed', start_time: iso(t0), end_time: iso(t0 + 6000), duration_secs: 6 },
      { call_session_id: 'sess-carrier-only', status: 'completed', start_time: iso(t0), end_time: iso(t0 + 6000), duration_secs: 6 },
      { call_sid: 'sess-never-answered', status: 'no-answer', start_time: iso(t0), end_time: iso(t0 + 20_000), duration_secs: 0 },
      { call_session_id: 'sess-missed-here', status: 'completed', start_time: iso(t0), end_time: iso(t0 + 30_000), duration_secs: 12 },
      { call_session_id: 'sess-missed-here', status: 'completed', start_time: iso(t0), end_time: iso(t0 + 30_000), duration_secs: 12 },
      { call_session_id: 'sess-missed-both', status: 'no-answer', start_time: iso(t0), end_time: iso(t0 + 20_000), duration_secs: 0 },
    ].map((line) => JSON.stringify(line));
    const dir = mkdtempSync(join(tmpdir(), 'audit-'));
    const file = join(dir, 'calls.jsonl');
    writeFileSync(file, [...log, 'this is not json', ''].join('\n'));
    const run = await runCliHere(['audit:calls', '--carrier-log', file, '--json'], { DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({
      ok: false,
      carrier_calls: 6,
      missing_here: [{ carrier_call_id: 'sess-carrier-only', status: 'completed' }],
      missing_at_carrier: [{ call_id: unlisted, carrier_call_id: 'sess-unlisted', status: 'completed' }],
      duration_mismatches: [{ call_id: mismatched, carrier_call_id: 'sess-mismatch', ours: 61, carrier: 90 }],
      unanswered_here: [{ call_id: missedHere, carrier_call_id: 'sess-missed-here', status: 'missed', carrier_duration: 12 }],
      invalid_lines: [9],
    });
    expect(report.unanswered_here).toHaveLength(1);
    expect(JSON.stringify(report)).not.toContain(matching);
    expect(JSON.stringify(report)).not.toContain(missedBoth);
    const humanRun = await runCliHere(['audit:calls', '--carrier-log', file], { DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' });
    expect(humanRun.stdout).toContain(`UNANSWERED HERE    ${missedHere}`);

    const clean = join(dir, 'clean.jsonl');
    writeFileSync(clean, [log[0], JSON.stringify({ call_session_id: 'sess-mismatch', status: 'completed', duration_secs: 64 }), JSON.stringify({ call_session_id: 'sess-unlisted', status: 'completed', duration_secs: 30 }), JSON.stringify({ call_session_id: 'sess-missed-here', status: 'no-answer', duration_secs: 0 }), log[7]].join('\n'));
    const agreed = await runCliHere(['audit:calls', '--carrier-log', clean], { DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' });
    expect(agreed.code).toBe(0);
    expect(agreed.stdout).toMatch(/they agree/);

    const missing = await runCliHere(['audit:calls', '--carrier-log', join(dir, 'nope.jsonl'), '--json'], { DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' });
    expect(missing.code).not.toBe(0);
    expect(JSON.parse(missing.stdout).errors[0].detail).toMatch(/cannot read --carrier-log/);
  }, 120_000);

  it('--since and --account: only that account\'s calls ended at or after since, on both sides; no findings from earlier runs or other accounts', async () => {
    const accounts = t.app.app.get(AccountsService);
    const [{ account: mine }, { account: other }] = [await accounts.createAccount('audit since'), await accounts.createAccount('audit other')];
    const since = Date.now() - 60_000;
    const iso = (ms: number) => new Date(ms).toISOString();
    // ended 2 s before since (a run before this one), its log line left in the file as the carrier's log keeps it
    await endedCall(mine.id, 'sess-earlier', since - 10_000, 8);
    const ours = await endedCall(mine.id, 'sess-ours', since + 1000, 5);
    await endedCall(other.id, 'sess-other-account', since + 1000, 5);
    const file = join(mkdtempSync(join(tmpdir(), 'audit-')), 'calls.jsonl');
    writeFileSync(file, [
      { call_session_id: 'sess-earlier', status: 'completed', start_time: iso(since - 11_000), end_time: iso(since - 1000), duration_secs: 12 },
      { call_session_id: 'sess-ours', status: 'completed', start_time: iso(since + 500), end_time: iso(since + 6000), duration_secs: 5 },
    ].map((line) => JSON.stringify(line)).join('\n'));
    const audit = (...args: string[]) => runCliHere(['audit:calls', '--carrier-log', file, ...args, '--json'], { DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' });

    const scoped = await audit('--since', iso(since), '--account', mine.id);
    expect(JSON.parse(scoped.stdout)).toMatchObject({ ok: true, carrier_calls: 1, our_calls: 1, missing_here: [], missing_at_carrier: [], duration_mismatches: [] });
    expect(scoped.code).toBe(0);
    expect(scoped.stdout).not.toContain('sess-earlier');

    // Without the scope: the window of the log, every account: the other account's call is a finding.
    const everyone = JSON.parse((await audit()).stdout);
    expect(everyone.missing_at_carrier).toEqual([expect.objectContaining({ carrier_call_id: 'sess-other-account' })]);
    expect(JSON.stringify(everyone)).not.toContain(ours);

    const bad = await audit('--since', 'yesterday');
    expect(bad.code).not.toBe(0);
    expect(JSON.parse(bad.stdout).errors[0].detail).toMatch(/--since must be an ISO 8601 time/);
  }, 120_000);
});
