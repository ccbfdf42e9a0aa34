import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { telnyxDevKeyPair } from '../../src/telephony/telnyx-dev-key.js';
import { expectVerified, startCluster, type Cluster } from '../support/cluster.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { freePort } from '../support/ports.js';
import { startSandboxChild, type SandboxChild } from '../support/sandbox-child.js';
import { waitFor } from '../support/wait.js';
import { runCliHere } from '../support/run-cli.js';

/**
 * Calls through ring plans on the built program as real processes (api, relay, two workers)
 * against the carrier sandbox playing Telnyx Call Control, every call webhook duplicated,
 * re-signed and reordered, the workers SIGKILLed mid-plan, a target that answers and drops at
 * once (its hangup delivered before its answer), and command answers lost (the carrier did it,
 * we never heard). Every assertion is a count: each call dials each target once, is bridged
 * once, billed once, announced answered once; no dead leg wins, no physical leg is created twice.
 */
const CALLS = 12;
const OUR_NUMBER = '+17735550101';
const DECLINES = '+17735550201';
const DROPS = '+17735550204';
const RINGS_OUT = '+17735550202';
const ANSWERS = '+17735550203';
const SEED = 'calls-chaos-seed';

describe('calls under chaos: workers killed mid-plan, every call webhook duplicated and reordered', () => {
  let db: TestDatabase;
  let cluster: Cluster;
  let sandbox: SandboxChild;

  beforeAll(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    sandbox = await startSandboxChild({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, SANDBOX_TELNYX_SEED: SEED, SANDBOX_CHAOS: 'duplicate=2,resign,reorder', LOG_LEVEL: 'error' });
    cluster = await startCluster(
      db.url,
      TEST_REDIS_URL,
      { TELNYX_API_URL: `${sandbox.url}/v2`, TELNYX_PUBLIC_KEY: telnyxDevKeyPair(SEED).publicKey, DIAL_JOIN_TIMEOUT_SECONDS: '20' },
      { numbers: [OUR_NUMBER], port, cli: true },
    );
  }, 120_000);
  afterAll(async () => {
    await cluster?.stopAll();
    await sandbox?.stop();
    await db?.drop();
  });

  it(`${CALLS} inbound calls through decline → answer-then-drop → ring out → answer: four dials, one bridge, one usage row each`, async () => {
    const numberId = (await cluster.customer.get('/v2/phone_numbers')).body.data[0].id;
    const plan = { voice: { ring_plan: { targets: [{ to: DECLINES }, { to: DROPS }, { to: RINGS_OUT, timeout_secs: 5 }, { to: ANSWERS }], fallback: { action: 'hangup' } } } };
    expect((await cluster.customer.request('PATCH', `/v2/phone_numbers/${numberId}`, plan)).status).toBe(200);
    const behaviours = {
      time_scale: 0.05, [DECLINES]: { decline: true }, [DROPS]: { answer_then_drop: true }, [RINGS_OUT]: { no_answer: true }, [ANSWERS]: { answer_after_ms: 1000, talk_ms: 200_000 },
      // the carrier carries these out and the answer never reaches us: resent under the same command_id
      lose_command_answers: { dial: 3, bridge: { times: 2, status: 504 } },
    };
    expect((await fetch(`${sandbox.url}/sandbox/calls/behaviours`, { method: 'POST', body: JSON.stringify(behaviours) })).status).toBe(200);
    const since = new Date().toISOString();

    for (let i = 0; i < CALLS; i++) {
      const res = await fetch(`${sandbox.url}/sandbox/calls/inbound`, { method: 'POST', body: JSON.stringify({ from: `+1312555${String(1000 + i)}`, to: OUR_NUMBER }) });
      expect(res.status).toBe(202);
      if (i === 3) await cluster.workers[0].kill('SIGKILL');
      if (i === 6) cluster.workers[0].start();
      if (i === 8) await cluster.workers[1].kill('SIGKILL');
    }
    await waitFor(() => db.count(`SELECT count(*) FROM call_legs WHERE target_index = 2`), (n) => n >= CALLS / 2, { timeoutMs: 60_000, what: 'half the plans at their third target' });
    cluster.workers[1].start();
    await cluster.workers[0].restart();

    await waitFor(() => db.count(`SELECT count(*) FROM calls WHERE status = 'completed'`), (n) => n === CALLS, { timeoutMs: 120_000, intervalMs: 250, what: `${CALLS} calls completed` });
    await waitFor(() => sandbox.stats(), (s) => s.calls.live_legs === 0 && s.webhooks.pending === 0, { timeoutMs: 60_000, what: 'no leg left up at the sandbox' });
    await waitFor(() => db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL AND error IS NULL`), (n) => n === 0, { timeoutMs: 60_000, what: 'every call event processed' });

    expect(await db.count(`SELECT count(*) FROM calls`)).toBe(CALLS);
    expect(await db.count(`SELECT count(*) FROM (SELECT call_id FROM call_legs GROUP BY call_id HAVING count(*) = 4 AND count(DISTINCT target_index) = 4) l`)).toBe(CALLS);
    // the dropped leg (its hangup delivered before its answer) never won: every winner is the target that answered and stayed
    expect(await db.count(`SELECT count(*) FROM calls c JOIN call_legs l ON l.id = c.answered_leg WHERE l.to_number = $1`, [ANSWERS])).toBe(CALLS);
    expect(await db.count(`SELECT count(*) FROM call_timeline t JOIN call_legs l ON l.id = t.leg WHERE l.to_number = $1 AND t.event_type = 'call.answered' AND t.outcome = 'stale'`, [DROPS])).toBeGreaterThanOrEqual(CALLS);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE kind = 'call_minutes'`)).toBe(CALLS);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'call.completed'`)).toBe(CALLS);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'call.answered'`)).toBe(CALLS);
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE error IS NOT NULL`)).toBe(0);
    const stats = (await sandbox.stats()).calls;
    expect(stats.dials.to).toMatchObject({ [DECLINES]: CALLS, [DROPS]: CALLS, [RINGS_OUT]: CALLS, [ANSWERS]: CALLS });
    expect(stats.dials).toMatchObject({ after_caller_hangup: 0, while_another_rings: 0, after_decline: 0, left_ringing: 0, duplicate_legs: 0 });
    expect(stats.lost_answers).toMatchObject({ dial: 3, bridge: 2 });
    expect(stats.commands.by_action).toMatchObject({ bridge: CALLS });
    await expectVerified(cluster);

    // The carrier's call log agrees with our calls.
    const log = await (await fetch(`${sandbox.url}/sandbox/calls/log?since=${encodeURIComponent(since)}`)).text();
    const file = join(mkdtempSync(join(tmpdir(), 'calls-log-')), 'log.jsonl');
    writeFileSync(file, log);
    const audit = await runCliHere(['audit:calls', '--carrier-log', file, '--json'], cluster.env);
    expect(JSON.parse(audit.stdout)).toMatchObject({ ok: true, carrier_calls: CALLS, missing_here: [], missing_at_carrier: [], duration_mismatches: [] });
    expect(audit.code).toBe(0);
  }, 300_000);
});
