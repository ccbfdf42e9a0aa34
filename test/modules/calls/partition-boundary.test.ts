import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CallCommandSends } from '../../../src/modules/calls/call-command-sends.js';
import { CallTimeline } from '../../../src/modules/calls/call-timeline.js';
import { CallTransitions } from '../../../src/modules/calls/call-transitions.js';
import { CteStatement } from '../../../src/platform/database/cte-statement.js';
import { exec } from '../../../src/platform/database/tx.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { IdPrefix, newId } from '../../../src/platform/ids.js';
import { createdAtOfId } from '../../../src/platform/retention/id-partition-key.js';
import { PartitionMaintenance } from '../../../src/platform/retention/partition-maintenance.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { boundaryIn as boundaryOf, lockTwinKey, waitingOnAdvisoryLock } from '../../support/partitions.js';
import { withTestApp } from '../../support/with-test-app.js';

const ACCOUNT = 'acc_call_partitions';
const HISTORY = ['call_legs', 'call_timeline', 'call_transcript_fragments', 'call_command_sends'] as const;

/**
 * The call history partitioned by the call's time (migrations 0053-0055): each unique key stays
 * one fact across a partition boundary (a carrier call is one call, a stored carrier event one
 * timeline entry, a command id one send record), proven by racing a twin the test holds
 * uncommitted on the other side of a boundary put a second from now; and retention drops a
 * period's call and history together, never while a call begun in it is live.
 */
describe('call history: one fact per key across partitions; a call and its history age out together', () => {
  const t = withTestApp({ http: false });
  const uow = () => t.app.app.get(UnitOfWork);
  const waiting = () => waitingOnAdvisoryLock(t.db.pool, "the app's statement to wait on the key's lock the test holds");
  const account = () => t.db.pool.query(`INSERT INTO accounts (id, name) VALUES ($1, 'call partitions') ON CONFLICT DO NOTHING`, [ACCOUNT]);
  const boundaryIn = async (table: string, ms: number) => (await account(), boundaryOf(t.db.pool, table, ms));

  type Q = (sql: string, params?: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>;

  /** Runs `body` in a transaction the test holds open (`q` runs more in it) until `end` says how it ends. */
  async function holding<T>(body: (q: Q) => Promise<T>) {
    const holder = await t.db.pool.connect();
    await holder.query('BEGIN');
    const q: Q = (sql, params) => holder.query(sql, params);
    const value = await body(q);
    return {
      value,
      q,
      end: async (how: 'COMMIT' | 'ROLLBACK') => {
        try {
          await holder.query(how);
        } finally {
          holder.release();
        }
      },
    };
  }

  const partsOf = async (sql: string, params: unknown[]) => (await t.db.pool.query(sql, params)).rows.map((r) => r.part as string);
  const timelineParts = (eventId: string) => partsOf(`SELECT tableoid::regclass::text AS part FROM call_timeline WHERE carrier_event_id = $1`, [eventId]);
  const insertEntry = (q: Q, callId: string, eventId: string) =>
    q(`INSERT INTO call_timeline (call_id, carrier_event_id, event_type, outcome, occurred_at, received_at) VALUES ($1, $2, 'call.hangup', 'applied', now(), now())`, [callId, eventId]);
  /** An entry as the app records one: a CTE of its own statement (CallTimeline.recordIn). */
  const recordEntry = (entry: Parameters<CallTimeline['recordIn']>[1]) =>
    uow().run(async (tx) => {
      const stmt = new CteStatement();
      t.app.app.get(CallTimeline).recordIn(stmt, entry);
      await exec(tx, stmt.text('SELECT 1'), stmt.params);
    });

  describe('calls: one call per carrier call (call_twin)', () => {
    const create = (carrierCallId: string) =>
      uow().run((tx) =>
        t.app.app.get(CallTransitions).create(tx, { accountId: ACCOUNT, direction: 'inbound', from: '+13125550100', to: '+13125550101', carrier: 'telnyx', carrierCallId, transcribe: false, status: 'ringing' }),
      );
    /** A call of `session` as create writes it, in the partition of its id's time. */
    const insertCall = (q: Q, id: string, session: string) =>
      q(`INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, created_at)
         VALUES ($1, $2, 'inbound', '+13125550100', '+13125550101', 'ringing', 'telnyx', $3, onceline_id_time($1))`, [id, ACCOUNT, session]);
    const callParts = (carrierCallId: string) => partsOf(`SELECT tableoid::regclass::text AS part FROM calls WHERE carrier = 'telnyx' AND carrier_call_id = $1`, [carrierCallId]);

    it('the carrier call again just after the boundary is the same call: nothing created, one row, before it', async () => {
      const { before, passed } = await boundaryIn('calls', 1000);
      const session = `v3:${randomUUID()}`;
      expect(await create(session)).toBeDefined();
      await passed();
      expect(await create(session)).toBeUndefined();
      expect(await callParts(session)).toEqual([before]);
    }, 30_000);

    it.each([
      ['commits', false, 'before'],
      ['rolls back', true, 'after'],
    ] as const)('racing across the boundary with a twin the test holds uncommitted, which then %s: created = %s, one call', async (ending, created, side) => {
      const { before, after, passed } = await boundaryIn('calls', 1000);
      const session = `v3:${randomUUID()}`;
      const held = await holding(async (q) => {
        // As create's INSERT does: no stored twin, so the key's lock is taken; then the call, before the boundary.
        expect((await q(`SELECT call_twin('telnyx', $1) AS twin`, [session])).rows[0].twin).toBeNull();
        await insertCall(q, newId(IdPrefix.Call), session);
      });
      await passed();
      const racing = create(session);
      await waiting();
      await held.end(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
      expect((await racing) !== undefined).toBe(created);
      expect(await callParts(session)).toEqual([side === 'before' ? before : after]);
    }, 30_000);

    it('the key\'s lock held by the test before any look, the twin written only once create waits on it: create looks after the lock, finds it, creates nothing', async () => {
      const { at, before, passed } = await boundaryIn('calls', 1000);
      const session = `v3:${randomUUID()}`;
      const held = await holding((q) => lockTwinKey(q, `call:telnyx:${session}`));
      await passed();
      const racing = create(session);
      await waiting();
      await insertCall(held.q, newId(IdPrefix.Call, at.getTime() - 100), session);
      await held.end('COMMIT');
      expect(await racing).toBeUndefined();
      expect(await callParts(session)).toEqual([before]);
    }, 30_000);
  });

  it.each([
    ['commits', 'before'],
    ['rolls back', 'after'],
  ] as const)('call_timeline: one entry per stored carrier event across the boundary (call_timeline_twin); the twin held uncommitted %s: one entry, %s it', async (ending, side) => {
    const { at, before, after, passed } = await boundaryIn('call_timeline', 1000);
    // Two calls either side of the boundary (the timeline is keyed by its call's id time), one carrier event.
    const [earlyCall, lateCall] = [newId(IdPrefix.Call, at.getTime() - 100), newId(IdPrefix.Call, at.getTime() + 100)];
    const eventId = newId(IdPrefix.CarrierEvent);
    const entry = (callId: string) => ({ callId, carrierEventId: eventId, eventType: 'call.hangup', leg: null, outcome: 'applied' as const, occurredAt: new Date().toISOString(), receivedAt: new Date() });
    const held = await holding(async (q) => {
      expect((await q(`SELECT call_timeline_twin($1) AS twin`, [eventId])).rows[0].twin).toBeNull();
      await insertEntry(q, earlyCall, eventId);
    });
    await passed();
    const racing = recordEntry(entry(lateCall));
    await waiting();
    await held.end(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
    await racing;
    expect(await timelineParts(eventId)).toEqual([side === 'before' ? before : after]);
  }, 30_000);

  it('call_timeline: the key\'s lock held by the test before any look, the entry written only once the app\'s waits on it: the app looks after the lock, finds it, records none', async () => {
    const { at, before } = await boundaryIn('call_timeline', 1000);
    const [earlyCall, lateCall] = [newId(IdPrefix.Call, at.getTime() - 100), newId(IdPrefix.Call, at.getTime() + 100)];
    const eventId = newId(IdPrefix.CarrierEvent);
    const held = await holding((q) => lockTwinKey(q, `call-timeline:${eventId}`));
    const racing = recordEntry({ callId: lateCall, carrierEventId: eventId, eventType: 'call.hangup', leg: null, outcome: 'applied', occurredAt: new Date().toISOString(), receivedAt: new Date() });
    await waiting();
    await insertEntry(held.q, earlyCall, eventId);
    await held.end('COMMIT');
    await racing;
    expect(await timelineParts(eventId)).toEqual([before]);
  }, 30_000);

  it.each([
    ['commits', 2, 'before'],
    ['rolls back', 1, 'after'],
  ] as const)('call_command_sends: one record per command id across the boundary (call_command_send); the twin held uncommitted %s: sends = %s, one row, %s it', async (ending, sends, side) => {
    const { before, after, passed } = await boundaryIn('call_command_sends', 1000);
    const commandId = `${newId(IdPrefix.CallLeg)}-hangup`;
    const held = await holding(async (q) => (await q(`SELECT * FROM call_command_send($1, NULL)`, [commandId])).rows[0]);
    expect(held.value).toMatchObject({ sends: 1 });
    await passed();
    const racing = t.app.app.get(CallCommandSends).claim(null, { action: 'hangup', commandId, controlId: 'ctl-1' });
    await waiting();
    await held.end(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
    expect(await racing).toMatchObject({ sends });
    expect(await partsOf(`SELECT tableoid::regclass::text AS part FROM call_command_sends WHERE command_id = $1`, [commandId])).toEqual([side === 'before' ? before : after]);
  }, 30_000);

  it.each([
    ['calls', 'id', 'created_at'],
    ['call_legs', 'call_id', 'onceline_id_time(call_id)'],
    ['call_timeline', 'call_id', 'onceline_id_time(call_id)'],
  ])('%s by its call id names the partition key from the id: only the partitions within minutes of the call\'s time are scanned, never a later one', async (table, column, key) => {
    await account();
    const call = await uow().run(async (tx) => {
      const made = (await t.app.app.get(CallTransitions).create(tx, {
        accountId: ACCOUNT, direction: 'inbound', from: '+13125550100', to: '+13125550101', carrier: 'telnyx', carrierCallId: `v3:${randomUUID()}`, transcribe: false, status: 'ringing',
      }))!;
      await t.app.app.get(CallTransitions).addLeg(tx, made.id, { target: 0, attempt: 1, to: '+13125550102' });
      return made;
    });
    const { rows: plan } = await t.db.pool.query(`EXPLAIN (FORMAT JSON) SELECT * FROM ${table} WHERE ${column} = $1 AND ${createdAtOfId('$1', key)}`, [call.id]);
    const scanned = (JSON.stringify(plan[0]['QUERY PLAN']).match(new RegExp(`"Relation Name":"${table}_p\\w+"`, 'g')) ?? []).map((m) => m.slice(17, -1));
    const { rows: later } = await t.db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = $1::regclass AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), $$FROM \\('([^']*)'\\)$$))[1]::timestamptz > onceline_id_window_end($2)`,
      [table, call.id],
    );
    expect(later.length).toBeGreaterThanOrEqual(1);
    // One partition, or a few where this file split one into seconds-long pieces a moment ago.
    expect(scanned.length).toBeGreaterThanOrEqual(1);
    for (const { name } of later) expect(scanned).not.toContain(name);
  }, 30_000);

  it('retention: a period past CALLS_RETENTION_HOURS holding a live call keeps the call and its whole history; once the call ends they are dropped on the same run', async () => {
    await account();
    const WEEK = 7 * 86_400_000;
    const from = new Date(Math.floor(Date.now() / WEEK) * WEEK - 30 * WEEK);
    const to = new Date(from.getTime() + WEEK);
    const names: Record<string, string> = {};
    for (const table of ['calls', ...HISTORY]) {
      names[table] = (await t.db.pool.query(`SELECT onceline_add_partition($1, $2, $3) AS name`, [table, from, to])).rows[0].name;
    }
    const callId = newId(IdPrefix.Call, from.getTime() + 3_600_000);
    const legId = newId(IdPrefix.CallLeg, from.getTime() + 3_600_100);
    await t.db.pool.query(
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, created_at)
       VALUES ($1, $2, 'inbound', '+13125550100', '+13125550101', 'in_progress', 'telnyx', $1, onceline_id_time($1))`,
      [callId, ACCOUNT],
    );
    await t.db.pool.query(`INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status, dialed_at) VALUES ($1, $2, 0, 1, '+13125550102', 'answered', onceline_id_time($1))`, [legId, callId]);
    await t.db.pool.query(`INSERT INTO call_timeline (call_id, carrier_event_id, event_type, outcome, occurred_at, received_at) VALUES ($1, $2, 'call.answered', 'applied', onceline_id_time($1), onceline_id_time($1))`, [callId, newId(IdPrefix.CarrierEvent)]);
    await t.db.pool.query(`INSERT INTO call_transcript_fragments (call_id, occurred_at, text) VALUES ($1, onceline_id_time($1), 'hello')`, [callId]);
    await t.db.pool.query(`INSERT INTO call_command_sends (command_id, call_id, first_sent_at) VALUES ($1, $2, onceline_id_time($2))`, [`${legId}-dial`, callId]);

    const run = async () => new Map((await t.app.app.get(PartitionMaintenance).maintain())!.map((r) => [r.table, r]));
    const kept = await run();
    for (const table of ['calls', ...HISTORY]) {
      expect(kept.get(table)!.held).toContain(names[table]);
      expect(kept.get(table)!.dropped).not.toContain(names[table]);
    }
    await t.db.pool.query(`UPDATE calls SET ended_at = now(), status = 'completed' WHERE id = $1`, [callId]);
    const dropped = await run();
    for (const table of ['calls', ...HISTORY]) expect(dropped.get(table)!.dropped).toContain(names[table]);
    expect(await t.db.count(`SELECT count(*) FROM pg_class WHERE relname = ANY ($1)`, [Object.values(names)])).toBe(0);

    // Its charge outlives it in the ledger: verify takes a call of that age as having existed, not a recent one.
    const billed = (resourceId: string) =>
      t.db.pool.query(
        `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
         VALUES (onceline_id('use'), $1, 'call_minutes', $2, 1, 7000, 7000, jsonb_build_object('resource', jsonb_build_object('type', 'call', 'id', $2::text),
                 'carrier_events', '[]'::jsonb, 'legacy', true, 'price_rule', jsonb_build_object('unit', 'minute', 'quantity', 1, 'unit_price_micros', 7000))) RETURNING id`,
        [ACCOUNT, resourceId],
      ).then((r) => r.rows[0].id as string);
    await billed(callId);
    const phantom = await billed(newId(IdPrefix.Call));
    const report = await t.app.app.get(VerifyService).run({ limit: 5 });
    expect(report.invariants.find((i) => i.name === 'billing.usage_has_resource')).toMatchObject({ ok: false, count: 1, examples: [phantom] });
  }, 60_000);
});
