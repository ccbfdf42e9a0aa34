import { Injectable } from '@nestjs/common';
import type { CallEvent } from '../../carriers/normalized-event.js';
import { isoTimestampSql } from '../../platform/database/cte-statement.js';
import { IdPrefix, newId } from '../../platform/ids.js';
import { DecidesCarrierEventsInSets, type EventBatchRun } from '../ingest/carrier-event-handlers.js';
import { PhoneNumbers, type VoiceRoute } from '../numbers/phone-numbers.service.js';
import { startPlan } from '../sequential-ring/ring-plan.js';
import { CustomerEvents } from '../webhooks/customer-events.js';
import { DUPLICATE_START_NOTE } from './call-carrier-events.js';
import { CallControlCommands } from './call-control-commands.js';
import { CallFlow } from './call-flow.js';
import { CallTimeline } from './call-timeline.js';
import { toCallView, type CallRow, type LegRow } from './call-view.js';
import { CallControlCommandsJob } from './calls.jobs.js';


/** The start's columns of an input row (startRow). */
const START_COLUMNS = `kind text, carrier text, call_session_id text, control_id text, from_number text, to_number text, occurred_at timestamptz,
  account_id text, voice jsonb, call_id text, ring_plan jsonb, transcribe boolean, leg_id text, leg_target int, leg_attempt int, leg_to text,
  batch text, commands jsonb, payload jsonb`;

/**
 * New incoming calls started in sets: the callers' call.initiated of many calls in one statement
 * (EventBatchRun), each under its call's turn, with the guards and the writes of the transaction
 * path (CallCarrierEvents.incoming, IncomingCalls.start, CallFlow.applyRingStep):
 *  - a call to a number with a ring plan: the call row, once per carrier session (call_twin, the
 *    create guard: looked for with a fresh snapshot under the session key's lock, which the
 *    statement then holds), the first try's leg, its dial (sent by this process once the
 *    statement commits, CallControlCommandsJob: `next`), `call.initiated` with the payload the
 *    transaction path announces (the call, no legs yet) and the timeline entry `applied`;
 *  - a repeat (another event id of a session whose call exists): `duplicate`, the call probed once.
 * The plan's first step is decided in JS (startPlan, the plan's one policy; the dial built by
 * CallControlCommands as the transaction builds it) from the numbers' routes read before the
 * statement (one read per batch); the statement reads each route again (the numbers module's
 * voiceRoutesCte) and starts a call only where the number is still its account's with the voice
 * settings the decision was taken from: a compare, as legHangups' ring_plan = expected. Anything
 * else (a number nobody owns, calls off on it, settings changed since the read, a call whose turn
 * is taken) writes nothing here and goes at once to the transaction, which decides as before.
 * A start then costs a share of two round trips (the read, the statement), not a transaction.
 */
@Injectable()
export class CallStartsInSets {
  constructor(
    private readonly numbers: PhoneNumbers,
    private readonly flow: CallFlow,
    private readonly commands: CallControlCommands,
    private readonly timeline: CallTimeline,
    private readonly events: CustomerEvents,
  ) {}

  /**
   * Which call.initiated are offered to the set statement (callStarts): a caller's on Telnyx, a
   * call to one of our numbers maybe (the leg of no call we dialed, not our own endpoint calling
   * out). Our own legs' go to CallEventSets.legsUp.
   */
  callerStart(event: CallEvent): boolean {
    return event.carrier === 'telnyx' && event.ourLeg === undefined && event.direction !== 'outbound';
  }

  @DecidesCarrierEventsInSets('call.initiated', { key: (event) => event.callSessionId, when: 'callerStart', afterCommit: CallControlCommandsJob })
  async callStarts(events: CallEvent[], run: EventBatchRun): Promise<void> {
    const routes = await this.numbers.voiceRoutes(events.map((event) => event.to ?? ''));
    const { stmt } = run;
    const input = run.input(START_COLUMNS, events.map((event) => startRow(this.flow, event, routes.get(event.to ?? ''))));
    const turns = run.takeCallTurns('call_session_id');
    const route = this.numbers.voiceRoutesCte(stmt, 'call_start_routes', input, 'to_number');
    // Per event whose turn the statement holds and whose number is ours: the call its session
    // already has (call_twin: a fresh look under the session key's lock, kept to the commit, so
    // no other start of that session can insert meanwhile), and whether the route is as read.
    const probed = stmt.with(
      'call_start_probed',
      `SELECT i.event_id, t.received_at, call_twin(i.carrier, i.call_session_id) AS twin,
              coalesce(r.account_id = i.account_id AND r.voice = i.voice, false) AS as_read
         FROM ${input} i JOIN ${turns} t ON t.event_id = i.event_id JOIN ${route} r ON r.event_id = i.event_id`,
      { materialized: true },
    );
    const probe = (row: string, holds: string) => `EXISTS (SELECT FROM ${probed} p WHERE p.event_id = ${row}.event_id AND ${holds})`;
    const consumed = run.consume({
      ready: (row) => probe(row, '(p.twin IS NOT NULL OR p.as_read)'),
      note: (row) => `CASE WHEN ${probe(row, 'p.twin IS NOT NULL')} THEN ${stmt.param(DUPLICATE_START_NOTE, 'text')} END`,
    });
    // The guard: no call for the session (p.twin IS NULL, call_twin's). ON CONFLICT: the
    // partition's own unique index, as create's.
    const started = stmt.with(
      'calls_started',
      `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, ring_plan, transcribe, created_at)
       SELECT i.call_id, i.account_id, 'inbound', i.from_number, i.to_number, 'ringing', i.carrier, i.call_session_id, i.control_id, i.ring_plan, i.transcribe, onceline_id_time(i.call_id)
         FROM ${input} i JOIN ${consumed} k ON k.consumed_event_id = i.event_id JOIN ${probed} p ON p.event_id = i.event_id
        WHERE p.twin IS NULL AND p.as_read
       ON CONFLICT DO NOTHING
       RETURNING id AS call_id, created_at`,
    );
    const legs = stmt.with(
      'call_legs_started',
      `INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status)
       SELECT i.leg_id, s.call_id, i.leg_target, i.leg_attempt, i.leg_to, 'dialing' FROM ${input} i JOIN ${started} s ON s.call_id = i.call_id
       ON CONFLICT DO NOTHING RETURNING call_id`,
    );
    this.commands.queueManyIn(stmt, stmt.with('call_start_commands', `SELECT i.call_id, i.batch, i.commands FROM ${input} i JOIN ${legs} l ON l.call_id = i.call_id`));
    // The payload built in JS (toCallView), but the call's created_at, which the insert made.
    const announced = stmt.with(
      'call_start_announced',
      `SELECT i.account_id, i.payload || jsonb_build_object('created_at', ${isoTimestampSql('s.created_at')}) AS payload FROM ${input} i JOIN ${started} s ON s.call_id = i.call_id`,
    );
    this.events.emitFromCte(stmt, announced, 'call.initiated', 'payload');
    const entries = (calls: string, where = 'true') =>
      `SELECT i.event_id, ${calls} AS call_id, 'caller' AS leg_id, i.kind, i.occurred_at, p.received_at
         FROM ${input} i JOIN ${probed} p ON p.event_id = i.event_id ${where}`;
    this.timeline.recordManyIn(stmt, stmt.with('call_starts_applied', entries('s.call_id', `JOIN ${started} s ON s.call_id = i.call_id`)), consumed, { outcome: 'applied' });
    this.timeline.recordManyIn(stmt, stmt.with('call_starts_repeated', entries('p.twin', 'WHERE p.twin IS NOT NULL')), consumed, { outcome: 'duplicate', name: 'call_timeline_repeats' });
  }
}

/**
 * An event's input row. For a number of ours with a ring plan (as read before the statement): the
 * call it starts (a new id), the plan's first step (startPlan), the first try's leg (a new id) and
 * its dial, built as IncomingCalls.start and CallFlow.applyRingStep build them, and the
 * `call.initiated` payload IncomingCalls.start announces (before the leg: no legs). Otherwise the
 * event alone (voice null, which no route matches): a repeat may still be found, nothing started.
 */
function startRow(flow: CallFlow, event: CallEvent, route: VoiceRoute | undefined): object {
  const row = {
    kind: event.kind, carrier: event.carrier, call_session_id: event.callSessionId, control_id: event.carrierCallId,
    from_number: event.from ?? 'anonymous', to_number: event.to ?? '', occurred_at: event.occurredAt,
  };
  const decision = route?.voice ? startPlan(route.voice) : undefined;
  // A plan that starts with its fallback (no target to dial) is the transaction's.
  if (!route?.voice || decision?.step.kind !== 'dial') return row;
  const { step, plan } = decision;
  const call: CallRow = {
    id: newId(IdPrefix.Call), account_id: route.accountId, direction: 'inbound', from_number: row.from_number, to_number: row.to_number, status: 'ringing',
    carrier: event.carrier, carrier_call_id: event.callSessionId, caller_control_id: event.carrierCallId, ring_plan: plan, answered_leg: null, answered_at: null,
    bridged_at: null, ended_at: null, duration_seconds: null, billable_minutes: null, hangup_cause: null, transcribe: route.voice.transcribe, voicemail_url: null,
    transcript: null, created_at: new Date(0),
  };
  const leg = { id: newId(IdPrefix.CallLeg), call_id: call.id, target_index: step.leg.target, attempt: step.leg.attempt, to_number: step.to } as LegRow;
  const { batch, commands } = flow.ringStepCommands(call, step, leg)!;
  const { created_at: _madeByTheInsert, ...payload } = toCallView(call, []);
  return {
    ...row, account_id: route.accountId, voice: route.voice, call_id: call.id, ring_plan: plan, transcribe: call.transcribe,
    leg_id: leg.id, leg_target: leg.target_index, leg_attempt: leg.attempt, leg_to: leg.to_number, batch, commands, payload,
  };
}
