import { describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { CallCommandCompletions } from '../../../src/modules/calls/call-command-completions.js';
import { CallCommandSends } from '../../../src/modules/calls/call-command-sends.js';
import { CallControlCommands, type QueuedCommand } from '../../../src/modules/calls/call-control-commands.js';
import { CallFlow } from '../../../src/modules/calls/call-flow.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import type { CallRow, LegRow } from '../../../src/modules/calls/call-view.js';
import { startPlan } from '../../../src/modules/sequential-ring/ring-plan.js';
import { newId, IdPrefix } from '../../../src/platform/ids.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { captured } from '../../support/captured-statements.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * A call's commands claimed and their jobs ended in shared statements (CallCommandSends,
 * CallCommandCompletions: group commit): the claims or ends made while one statement runs go in
 * the next, each still decided by its own guard in it. Each case puts rows that must be decided
 * differently in one statement, or holds a competitor on a lock the test owns.
 */
describe('call commands claimed and ended in sets', () => {
  const t = withTestApp({ http: false });
  const transitions = () => t.app.app.get(CallTransitions);
  const uow = () => t.app.app.get(UnitOfWork);
  const sends = () => t.app.app.get(CallCommandSends);
  const completions = () => t.app.app.get(CallCommandCompletions);
  const commands = () => t.app.app.get(CallControlCommands);

  /** A ringing call whose plan rings target 0, with that leg dialed. */
  async function ringingCall(): Promise<{ call: CallRow; leg0: LegRow }> {
    const { account } = await t.app.app.get(AccountsService).createAccount('command batches');
    const { plan } = startPlan({ ring_plan: { targets: [{ to: '+15550000001', timeout_secs: 20 }], fallback: { action: 'hangup' } }, transcribe: false });
    return uow().run(async (tx) => {
      const call = (await transitions().create(tx, { accountId: account.id, direction: 'inbound', from: '+15550000009', to: '+15550000008', carrier: 'telnyx', carrierCallId: `s-${Math.random()}`, callerControlId: 'v3:caller', ringPlan: plan, transcribe: false, status: 'ringing' }))!;
      const leg0 = (await transitions().addLeg(tx, call.id, { target: 0, attempt: 1, to: '+15550000001' }))!;
      return { call, leg0 };
    });
  }
  const endCall = (call: CallRow) => uow().run(async (tx) => t.app.app.get(CallFlow).endCall(tx, (await transitions().lockById(tx, call.id))!, new Date().toISOString(), 'normal_clearing', 'caller'));
  /** A command job's row, leased an hour ahead (no relay takes it meanwhile). */
  async function commandJob(): Promise<string> {
    const jobId = `cmd-${newId(IdPrefix.CallLeg)}`;
    await t.db.pool.query(`INSERT INTO outbox_jobs (job_id, queue, name, data, run_at) VALUES ($1, 'calls', 'call-commands', '{}', now() + interval '1 hour')`, [jobId]);
    return jobId;
  }
  const completed = async (jobId: string) => (await t.db.pool.query(`SELECT completed_at IS NOT NULL AS done FROM outbox_jobs WHERE job_id = $1`, [jobId])).rows[0].done as boolean;
  const legControl = async (legId: string) => (await t.db.pool.query(`SELECT control_id FROM call_legs WHERE id = $1`, [legId])).rows[0].control_id as string | null;
  /** `promise`, or a failure naming `what` once `ms` have passed. */
  const within = <T>(ms: number, promise: Promise<T>, what: string): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms)));
    return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
  };
  const claimStatements = (texts: string[]) => texts.filter((text) => text.includes('call_command_send('));
  const endStatements = (texts: string[]) => texts.filter((text) => text.startsWith('WITH ends AS MATERIALIZED'));

  it("claims made together are one statement, each under its own guard: the dial of a call that ended is not wanted, a live call's dial and a hangup are sent", async () => {
    const ended = await ringingCall();
    const live = await ringingCall();
    await endCall(ended.call);
    const dialOf = ({ call, leg0 }: { call: CallRow; leg0: LegRow }): QueuedCommand => commands().dial(call, leg0, 20);
    const hangup = commands().hangupStray(live.leg0.id, 'v3:stray');
    const { result, texts } = await captured(() => Promise.all([sends().claim(ended.call.id, dialOf(ended)), sends().claim(live.call.id, dialOf(live)), sends().claim(live.call.id, hangup)]));
    expect(claimStatements(texts)).toHaveLength(1);
    expect(result.map((send) => send?.sends)).toEqual([undefined, 1, 1]);
    expect(await t.db.count(`SELECT count(*) FROM call_command_sends WHERE command_id = $1`, [`${ended.leg0.id}-dial`])).toBe(0);
  });

  it('the join of a winner is wanted only while its leg is the live winner: the same statement claims the answer of one call and refuses the other, whose call ended', async () => {
    const won = await ringingCall();
    const lost = await ringingCall();
    for (const { call, leg0 } of [won, lost]) await uow().run((tx) => transitions().answerByLeg(tx, call.id, leg0.id, new Date().toISOString()));
    await endCall(lost.call);
    const { result, texts } = await captured(() => Promise.all([won, lost].map(({ call, leg0 }) => sends().claim(call.id, commands().answerCaller(call, leg0.id)))));
    expect(claimStatements(texts)).toHaveLength(1);
    expect(result.map((send) => send?.sends)).toEqual([1, undefined]);
  });

  it('the same command claimed twice in one statement (twin runs) is one record, sent twice: the second claim bumps the row the first made', async () => {
    const { call, leg0 } = await ringingCall();
    const dial = commands().dial(call, leg0, 20);
    const { result, texts } = await captured(() => Promise.all([sends().claim(call.id, dial), sends().claim(call.id, dial)]));
    expect(claimStatements(texts)).toHaveLength(1);
    expect(result.map((send) => send?.sends).sort()).toEqual([1, 2]);
    expect(await t.db.count(`SELECT count(*) FROM call_command_sends WHERE command_id = $1`, [dial.commandId])).toBe(1);
  });

  it("a claim waits for a twin's send held uncommitted (the command id's lock), then bumps the row it made: one record, two sends", async () => {
    const { call, leg0 } = await ringingCall();
    const dial = commands().dial(call, leg0, 20);
    const held = await t.db.pool.connect();
    try {
      await held.query('BEGIN');
      await held.query(`SELECT * FROM call_command_send($1, $2)`, [dial.commandId, call.id]);
      const claim = sends().claim(call.id, dial);
      await waitFor(() => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE 'SELECT w.n, s.first_sent_at%'`), (n) => n === 1, { what: "the claim waiting on the twin's command id lock" });
      await held.query('COMMIT');
      expect((await claim)?.sends).toBe(2);
    } finally {
      // A failure above leaves the twin's transaction open: ended here, so its lock goes with it.
      await held.query('ROLLBACK').catch(() => undefined);
      held.release();
    }
    expect(await t.db.count(`SELECT count(*) FROM call_command_sends WHERE command_id = $1`, [dial.commandId])).toBe(1);
  });

  it("ends made together are one statement: a job whose dial's leg is kept is completed, one whose leg names another physical leg is not, one without a dial is", async () => {
    const kept = await ringingCall();
    const other = await ringingCall();
    await uow().run((tx) => transitions().claimLegControl(tx, other.leg0, 'v3:first'));
    const [keptJob, otherJob, plainJob] = [await commandJob(), await commandJob(), await commandJob()];
    const { result, texts } = await captured(() =>
      Promise.all([
        completions().end({ jobId: keptJob, keep: { legId: kept.leg0.id, callId: kept.call.id, controlId: 'v3:kept' } }),
        completions().end({ jobId: otherJob, keep: { legId: other.leg0.id, callId: other.call.id, controlId: 'v3:second' } }),
        completions().end({ jobId: plainJob }),
      ]),
    );
    expect(endStatements(texts)).toHaveLength(1);
    expect(result).toEqual([true, false, false]);
    expect([await completed(keptJob), await completed(otherJob), await completed(plainJob)]).toEqual([true, false, true]);
    expect([await legControl(kept.leg0.id), await legControl(other.leg0.id)]).toEqual(['v3:kept', 'v3:first']);
  });

  it("a dial's end finds its leg by index under the generic plan the app runs it with, not by scanning its call's partition", async () => {
    const { call, leg0 } = await ringingCall();
    // A young partition (a few dozen legs, never analyzed): the generic plan (100 rows guessed for
    // the ends' JSON) hashed the ends and scanned every leg of it, computing each one's call time.
    await t.db.pool.query(
      `INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status) SELECT $1 || '-' || g, $2, g, 1, '+15550000001', 'ended' FROM generate_series(1, 60) AS g`,
      [leg0.id, call.id],
    );
    const jobId = await commandJob();
    const sent: { text: string; values: unknown[] }[] = [];
    const prototype = pg.Client.prototype as unknown as { query: (config: unknown, ...rest: unknown[]) => unknown };
    const original = prototype.query;
    prototype.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
      const text = typeof config === 'string' ? config : (config as { text?: string }).text;
      if (text?.startsWith('WITH ends AS MATERIALIZED')) sent.push({ text, values: (Array.isArray(rest[0]) ? rest[0] : (config as { values?: unknown[] }).values) ?? [] });
      return original.call(this, config, ...rest);
    };
    try {
      expect(await completions().end({ jobId, keep: { legId: leg0.id, callId: call.id, controlId: 'v3:kept' } })).toBe(true);
    } finally {
      prototype.query = original;
    }
    expect(sent).toHaveLength(1);
    const client = await t.db.pool.connect();
    try {
      await client.query(`BEGIN; SET LOCAL plan_cache_mode = force_generic_plan`);
      await client.query(`PREPARE end_plan AS ${sent[0].text}`);
      const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE end_plan(${sent[0].values.map((value) => client.escapeLiteral(String(value))).join(', ')})`);
      const scans: string[] = [];
      const walk = (node: Record<string, unknown>) => {
        if (String(node['Relation Name'] ?? '').startsWith('call_legs_') && Number(node['Actual Loops']) > 0) scans.push(String(node['Node Type']));
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      walk(rows[0]['QUERY PLAN'][0].Plan);
      expect(scans.length).toBeGreaterThan(0);
      expect(scans.filter((type) => type === 'Seq Scan')).toEqual([]);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it("a set statement's join (CallFlow.joinCommandsSql) is joinCommands' batch and commands, with and without transcription", async () => {
    const flow = t.app.app.get(CallFlow);
    const { call, leg0 } = await ringingCall();
    for (const transcribe of [false, true]) {
      const expected = flow.joinCommands({ ...call, transcribe }, { ...leg0, control_id: 'v3:winner' });
      const sql = flow.joinCommandsSql('w');
      const { rows } = await t.db.pool.query(
        `SELECT ${sql.batch} AS batch, ${sql.commands} AS commands FROM (SELECT $1::text AS call_id, $2::text AS leg_id, $3::text AS caller_control_id, $4::boolean AS transcribe, 'v3:winner'::text AS control_id) AS w`,
        [call.id, leg0.id, call.caller_control_id, transcribe],
      );
      expect(rows[0]).toEqual(JSON.parse(JSON.stringify(expected)));
    }
  });

  it("a leg another statement holds does not hold up the ends it shares a statement with: they commit, and its own end waits alone for the leg, then finds it over", async () => {
    const held = await ringingCall();
    const free = await ringingCall();
    const [heldJob, freeJob] = [await commandJob(), await commandJob()];
    const pause = await pausePoint(t.db.url, { table: 'call_legs', on: 'UPDATE', when: `NEW.id = '${held.leg0.id}' AND NEW.ended_at IS NOT NULL` });
    await pause.hold();
    try {
      const closing = uow().run((tx) => transitions().closeLegsOfEndedCall(tx, held.call.id, new Date().toISOString()));
      await pause.waitUntilPaused();
      const heldEnd = completions().end({ jobId: heldJob, keep: { legId: held.leg0.id, callId: held.call.id, controlId: 'v3:held' } });
      // In the same statement as the held leg's end (submitted together), and committed while that leg is still held.
      expect(await within(5_000, completions().end({ jobId: freeJob, keep: { legId: free.leg0.id, callId: free.call.id, controlId: 'v3:free' } }), 'the free leg\'s end, while the other leg is held')).toBe(true);
      expect(await completed(freeJob)).toBe(true);
      await waitFor(() => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH ends AS MATERIALIZED%'`), (n) => n === 1, { what: "the held leg's end waiting alone on its row lock" });
      await pause.release();
      await closing;
      expect(await heldEnd).toBe(false);
    } finally {
      await pause.remove();
    }
    expect([await legControl(held.leg0.id), await legControl(free.leg0.id)]).toEqual([null, 'v3:free']);
    expect(await completed(heldJob)).toBe(false);
  });

  it("a dial's answer ended with its job, behind the call closing its legs: it waits, finds the leg over, keeps nothing and leaves the job to the transaction that follows", async () => {
    const { call, leg0 } = await ringingCall();
    const jobId = await commandJob();
    const pause = await pausePoint(t.db.url, { table: 'call_legs', on: 'UPDATE', when: `NEW.id = '${leg0.id}' AND NEW.ended_at IS NOT NULL` });
    await pause.hold();
    try {
      const closing = uow().run((tx) => transitions().closeLegsOfEndedCall(tx, call.id, new Date().toISOString()));
      await pause.waitUntilPaused();
      const ended = completions().end({ jobId, keep: { legId: leg0.id, callId: call.id, controlId: 'v3:leg-0' } });
      await waitFor(() => t.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH ends AS MATERIALIZED%'`), (n) => n === 1, { what: "the end waiting on the leg's row lock" });
      await pause.release();
      await closing;
      expect(await ended).toBe(false);
    } finally {
      await pause.remove();
    }
    expect(await legControl(leg0.id)).toBeNull();
    // Not completed: afterDial's transaction (claimLegControl finds the leg over, hangs up the physical leg) comes first.
    expect(await completed(jobId)).toBe(false);
  });
});
