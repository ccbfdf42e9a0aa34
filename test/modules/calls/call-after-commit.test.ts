import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ConnectionBudget } from '../../../src/platform/database/connection-budget.js';
import { ProcessCarrierEventJob } from '../../../src/modules/ingest/ingest.jobs.js';
import { JobRunner } from '../../../src/platform/outbox/job-runner.js';
import { OutboxService } from '../../../src/platform/outbox/outbox.service.js';
import { RelayWakeup } from '../../../src/platform/outbox/relay-wakeup.js';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { carrierFixture } from '../../support/carrier-signing.js';
import { pausePoint } from '../../support/pause.js';
import { VoicePipeline } from '../../support/voice-pipeline.js';
import { waitFor } from '../../support/wait.js';

const CALLER = '+15557791501';
const A = '+15557791601';
const B = '+15557791602';
const RING = '+15550310001';
const noAnswer = { hangup_cause: 'timeout', sip_hangup_cause: '487' };

/**
 * Call work on the after-commit path (issue #27): a call event's processing runs in the process
 * that stored it, the commands it decides are sent by the process whose transaction decided them,
 * right after that commit, and events of one call take turns on the call's lock instead of being
 * sent round the outbox again. No relay runs here, so nothing can reach the carrier through Redis.
 */
describe('call work after commit, with no relay', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    voice = await VoicePipeline.start({ CALL_COMMAND_TIMEOUT_MS: '500' }, { relay: false });
    await voice.number(RING, { ring_plan: { targets: [{ to: A }, { to: B }], fallback: { action: 'hangup' } } });
  });
  afterAll(async () => {
    await voice.stop();
  });

  it('a ring plan runs from dial to bridge: every command is sent right after the commit that decided it, none through Redis', async () => {
    const call = await voice.incoming(CALLER, RING);
    const callId = await voice.callId(call);
    const leg0 = await voice.dialOfTarget(callId, 0);
    await voice.legEvent(call, leg0, 'call.hangup', noAnswer);
    const leg1 = await voice.dialOfTarget(callId, 1);
    await voice.legEvent(call, leg1, 'call.answered');
    const bridge = await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
    expect(bridge.body.call_control_id).toBe(leg1.controlId);
    await voice.settled();
    // Each command job has its outcome, and no relay ever took it: redrive_at is set only by one.
    const jobs = await voice.db.pool.query<{ done: boolean; relayed: boolean }>(
      `SELECT completed_at IS NOT NULL AS done, redrive_at IS NOT NULL AS relayed FROM outbox_jobs WHERE name = 'call-commands' AND data->>'callId' = $1`,
      [callId],
    );
    expect(jobs.rows.length).toBeGreaterThanOrEqual(3);
    expect(jobs.rows.every((job) => job.done && !job.relayed)).toBe(true);
  });

  it('a command run here wakes no relay (its row is leased ahead: a relay would find nothing due); a job left to the relay does', async () => {
    const hint = jest.spyOn(voice.app.app.get(RelayWakeup), 'hint');
    try {
      const call = await voice.incoming(CALLER, RING);
      const callId = await voice.callId(call);
      await voice.dial(callId);
      await voice.settled();
      expect(hint).not.toHaveBeenCalled();
      const jobId = `left-to-relay-${randomUUID()}`;
      await voice.app.app.get(UnitOfWork).run((tx) => voice.app.app.get(OutboxService).enqueue(tx, { job: ProbeJob, data: { label: 'left-to-relay' }, jobId }));
      expect(hint).toHaveBeenCalledTimes(1);
      // No relay runs here: the probe is given its outcome by hand, so the tests after this one settle.
      await voice.db.pool.query(`UPDATE outbox_jobs SET completed_at = now() WHERE job_id = $1`, [jobId]);
    } finally {
      hint.mockRestore();
    }
  });

  it('a dial the carrier does not answer within CALL_COMMAND_TIMEOUT_MS is sent once more at once under the same command_id; the leg it names rings on', async () => {
    voice.telnyx.holdNext('dial');
    const call = await voice.incoming(CALLER, RING);
    const callId = await voice.callId(call);
    const first = await voice.dial(callId);
    // Far sooner than the 10 s carrier send timeout: the resend follows the short command deadline.
    const again = await voice.telnyx.next((c) => c.action === 'dial' && c.clientState?.call_id === callId, 2, 8000);
    voice.telnyx.releaseHeld();
    expect(again.body.command_id).toBe(first.body.command_id);
    // The answered resend names the leg: it rings on, not written off as a dial not answered.
    await waitFor(() => voice.db.pool.query(`SELECT control_id, ended_at FROM call_legs WHERE call_id = $1`, [callId]).then((r) => r.rows), (rows) => rows.length === 1 && rows[0].control_id === first.controlId && rows[0].ended_at === null, { what: 'the leg named by the resent dial' });
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.settled();
    expect(voice.telnyx.distinct('dial', (c) => c.clientState?.call_id === callId)).toHaveLength(1);
    expect(await voice.db.count(`SELECT sends FROM call_command_sends WHERE command_id = $1`, [first.body.command_id])).toBe(2);
  });

  it('a dial whose answer misses the deadline twice (the carrier slow, the leg created) is asked again under its command_id: no write-off, no other target dialed', async () => {
    // The carrier carries out the dial at once but answers it (and the resend) too late.
    voice.telnyx.holdNext('dial', 2);
    const call = await voice.incoming(CALLER, RING);
    const callId = await voice.callId(call);
    const first = await voice.dial(callId);
    const third = await voice.telnyx.next((c) => c.action === 'dial' && c.clientState?.call_id === callId, 3);
    voice.telnyx.releaseHeld();
    expect(third.body.command_id).toBe(first.body.command_id);
    await voice.legEvent(call, first, 'call.initiated', { state: 'bridging' });
    await voice.settled();
    const legs = (await voice.db.pool.query(`SELECT control_id, ended_at FROM call_legs WHERE call_id = $1`, [callId])).rows;
    expect(legs).toEqual([{ control_id: first.controlId, ended_at: null }]);
    expect(voice.telnyx.distinct('dial', (c) => c.clientState?.call_id === callId)).toHaveLength(1);
    await voice.legEvent(call, first, 'call.answered');
    const bridge = await voice.telnyx.next((c) => c.action === 'bridge' && c.controlId === call.caller);
    expect(bridge.body.call_control_id).toBe(first.controlId);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.settled();
    expect(await voice.call(callId)).toMatchObject({ status: 'completed' });
  });

  it('a hangup whose answer misses the deadline twice is asked again under its command_id, not given up with the leg left up', async () => {
    const call = await voice.incoming(CALLER, RING);
    const callId = await voice.callId(call);
    const leg = await voice.dial(callId);
    await voice.legEvent(call, leg, 'call.initiated', { state: 'bridging' });
    await voice.settled();
    voice.telnyx.holdNext('hangup', 2);
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' });
    await voice.telnyx.next((c) => c.action === 'hangup' && c.controlId === leg.controlId, 3);
    voice.telnyx.releaseHeld();
    await voice.settled();
    expect(voice.telnyx.distinct('hangup', (c) => c.controlId === leg.controlId)).toHaveLength(1);
    expect(await voice.call(callId)).toMatchObject({ status: 'missed' });
  });

  it("an event of a call waits on the call's lock while an earlier one is being handled, then runs: no re-queue with a delay", async () => {
    // The caller's call.initiated stops inside its transaction, after it wrote the call row.
    const pause = await pausePoint(voice.db.url, { table: 'calls', on: 'INSERT', when: `NEW.to_number = '${RING}'` });
    try {
      await pause.hold();
      const call = await voice.incoming(CALLER, RING);
      await pause.waitUntilPaused();
      // The caller leaves at once. This process runs it after the first (one turn per call); a run
      // of its job elsewhere (from Redis, another process) must wait for the first one's commit.
      expect(await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(200);
      const [hangup] = (await voice.db.pool.query<{ id: string }>(`SELECT id FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND event_type = 'call.hangup'`, [call.session])).rows;
      const elsewhere = voice.app.app.get(JobRunner).run(ProcessCarrierEventJob.name, hangup.id, 1);
      await waitFor(
        () => voice.db.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`),
        (n) => n >= 2,
        { what: "the hangup's run waiting on the call's lock" },
      );
      await pause.release();
      expect(['completed', 'skipped']).toContain(await elsewhere);
      const callId = await voice.callId(call);
      await voice.settled();
      expect(await voice.call(callId)).toMatchObject({ status: 'missed' });
      expect(await voice.db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'process-carrier-event' AND job_id LIKE '%-w%'`)).toBe(0);
    } finally {
      await pause.remove();
    }
  });
});

describe('events of one call in arrival order, with nothing run after commit', () => {
  let voice: VoicePipeline;

  beforeAll(async () => {
    // One ingest batch in flight at a time per batcher: a held batch holds everything batched with it.
    voice = await VoicePipeline.start({ WORKER_AFTER_COMMIT_JOBS: '0', WORKER_REALTIME_AFTER_COMMIT_JOBS: '0', INGEST_LANE_BACKLOG_MAX: '2', INGEST_BATCH_CONCURRENCY: '1' }, { relay: false });
    await voice.number(RING, { ring_plan: { targets: [{ to: A }], fallback: { action: 'hangup' } } });
  });
  afterAll(async () => {
    await voice.stop();
  });

  it('a later event run first handles the earlier untried one in its own transaction, in order; the earlier job then finds it done', async () => {
    const call = await voice.incoming(CALLER, RING);
    expect(await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(200);
    const events = (
      await voice.db.pool.query<{ id: string; type: string }>(`SELECT id, event_type AS type FROM carrier_events WHERE normalized->>'callSessionId' = $1 ORDER BY created_at, id`, [call.session])
    ).rows;
    expect(events.map((e) => e.type)).toEqual(['call.initiated', 'call.hangup']);
    const runner = voice.app.app.get(JobRunner);
    // The hangup's job runs before the call.initiated's: the call is recorded, then ended.
    expect(await runner.run(ProcessCarrierEventJob.name, events[1].id, 1)).toBe('completed');
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE normalized->>'callSessionId' = $1 AND processed_at IS NOT NULL`, [call.session])).toBe(2);
    const callId = await voice.callId(call);
    expect(await voice.call(callId)).toMatchObject({ status: 'missed' });
    expect(await runner.run(ProcessCarrierEventJob.name, events[0].id, 1)).toBe('completed');
    expect(await voice.db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'process-carrier-event' AND job_id LIKE '%-w%'`)).toBe(0);
  });

  it("ingest batches a call's events apart from SMS: a call's event is stored while an SMS batch waits on a row lock", async () => {
    const smsId = randomUUID();
    const payload = JSON.parse(carrierFixture('telnyx/message.received.json')).data.payload;
    const sms = JSON.stringify({
      data: { event_type: 'message.received', id: smsId, occurred_at: new Date().toISOString(), record_type: 'event', payload: { ...payload, id: `held-msg-${smsId}`, to: [{ phone_number: RING, status: 'webhook_delivered' }] } },
      meta: { attempt: 1, delivered_to: `${voice.app.url}/webhooks/telnyx` },
    });
    // The test's own transaction holds the SMS's key: its batch's INSERT waits for this transaction to end.
    const holder = await voice.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized) VALUES ($1, 'telnyx', $2, 'message.received', 'message.received', '{}', '{}')`,
        [`cev_held_${smsId}`, smsId],
      );
      let smsAnswered = false;
      const smsDelivery = voice.deliver(sms).then((status) => ((smsAnswered = true), status));
      await waitFor(
        () => voice.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO carrier_events%'`),
        (waiting) => waiting === 1,
        { what: "the SMS batch's INSERT to wait for the test's transaction" },
      );
      const call = { session: `apart-${randomUUID()}`, caller: `v3:caller-${randomUUID()}`, from: CALLER, to: RING };
      const callDelivery = voice.callerEvent(call, 'call.initiated', { direction: 'incoming', state: 'parked' });
      // Batched with the SMS (one batcher, one batch at a time), the call's event would wait for the held one.
      await waitFor(() => voice.db.count(`SELECT count(*) FROM carrier_events WHERE normalized->>'callSessionId' = $1`, [call.session]), (n) => n === 1, {
        what: "the call's event stored while the SMS batch waits",
      });
      expect(await callDelivery).toBe(200);
      expect(smsAnswered).toBe(false);
      await holder.query('ROLLBACK');
      expect(await smsDelivery).toBe(200);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  });

  it("interleaved: a job's claim takes the call's lock, and the event is read after it, in a statement of its own: what the lock's holder committed meanwhile is seen", async () => {
    const call = await voice.incoming(CALLER, RING);
    const [initiated] = (await voice.db.pool.query<{ id: string }>(`SELECT id FROM carrier_events WHERE normalized->>'callSessionId' = $1`, [call.session])).rows;
    // The test holds the call's lock, as a run of another event of the call would.
    const holder = await voice.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended('call-session:' || $1, 0))`, [call.session]);
      const run = voice.app.app.get(JobRunner).run(ProcessCarrierEventJob.name, initiated.id, 1);
      // The job's claim (one statement, which also takes the call's lock) waits on the test's lock,
      // having claimed the job's row.
      await waitFor(
        () => voice.db.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`),
        (n) => n === 1,
        { what: "the job's claim waiting on the call's lock" },
      );
      expect(await voice.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NULL`, [initiated.id])).toBe(1);
      // Meanwhile the lock's holder processes the event (as the run of a later event of the call would).
      await holder.query(`UPDATE carrier_events SET processed_at = now(), note = 'processed by the lock holder', attempts = attempts + 1 WHERE id = $1`, [initiated.id]);
      await holder.query('COMMIT');
      // The run reads the event once it holds the lock: processed, so its handler never runs.
      expect(await run).toBe('completed');
    } finally {
      holder.release();
    }
    const event = (await voice.db.pool.query(`SELECT note, attempts FROM carrier_events WHERE id = $1`, [initiated.id])).rows[0];
    expect(event).toEqual({ note: 'processed by the lock holder', attempts: 1 });
    expect(await voice.db.count(`SELECT count(*) FROM calls WHERE carrier_call_id = $1`, [call.session])).toBe(0);
    expect(await voice.db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND completed_at IS NOT NULL`, [initiated.id])).toBe(1);
  });

  it("backpressure: past INGEST_LANE_BACKLOG_MAX realtime runs waiting for a connection, ingest answers 503 and stores nothing; an SMS backlog refuses SMS, never a call's events; new calls' backlog refuses new calls, never a call in progress", async () => {
    const gate = voice.app.app.get(ConnectionBudget).gates.realtime;
    const events = () => voice.db.count(`SELECT count(*) FROM carrier_events`);
    const inboundSms = () => {
      const payload = JSON.parse(carrierFixture('telnyx/message.received.json')).data.payload;
      return JSON.stringify({
        data: { event_type: 'message.received', id: randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event', payload: { ...payload, id: `backlog-msg-${randomUUID()}`, to: [{ phone_number: RING, status: 'webhook_delivered' }] } },
        meta: { attempt: 1, delivered_to: `${voice.app.url}/webhooks/telnyx` },
      });
    };
    // The lane's every connection taken, and three ordinary runs (an SMS burst's) waiting behind them.
    const taken = Array.from({ length: gate.limit + 3 }, () => gate.acquire());
    expect(gate.waiting).toBe(3);
    const before = await events();
    expect(await voice.deliver(inboundSms())).toBe(503);
    expect(await events()).toBe(before);
    // A call's event would wait behind no SMS (urgent runs go first): stored.
    const first = { session: `backlogged-${randomUUID()}`, caller: `v3:caller-${randomUUID()}`, from: CALLER, to: RING };
    expect(await voice.callerEvent(first, 'call.initiated', { direction: 'incoming', state: 'parked' })).toBe(200);
    expect(await events()).toBe(before + 1);
    // Three new calls' runs waiting as well: a new call is refused; an event of a call in progress
    // would wait behind none of them (they go after it): stored.
    const takenNew = Array.from({ length: 3 }, () => gate.acquire('new'));
    expect(gate.waitingAhead('new')).toBe(3);
    const third = { session: `backlogged-${randomUUID()}`, caller: `v3:caller-${randomUUID()}`, from: CALLER, to: RING };
    expect(await voice.callerEvent(third, 'call.initiated', { direction: 'incoming', state: 'parked' })).toBe(503);
    expect(await voice.callerEvent(first, 'call.hangup', { hangup_cause: 'normal_clearing' })).toBe(200);
    expect(await events()).toBe(before + 2);
    // Three urgent runs (other calls' in progress) waiting as well: a call's event is refused too.
    const takenUrgent = Array.from({ length: 3 }, () => gate.acquire('soon'));
    expect(gate.waitingAhead('soon')).toBe(3);
    const second = { session: `backlogged-${randomUUID()}`, caller: `v3:caller-${randomUUID()}`, from: CALLER, to: RING };
    expect(await voice.callerEvent(second, 'call.initiated', { direction: 'incoming', state: 'parked' })).toBe(503);
    expect(await events()).toBe(before + 2);
    for (let i = 0; i < taken.length + takenNew.length + takenUrgent.length; i++) gate.release();
    await Promise.all([...taken, ...takenNew, ...takenUrgent]);
    expect(gate.waiting).toBe(0);
    expect(await voice.callerEvent(second, 'call.initiated', { direction: 'incoming', state: 'parked' })).toBe(200);
    expect(await voice.deliver(inboundSms())).toBe(200);
  });
});
