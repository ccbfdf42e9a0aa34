import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { randomUUID } from 'node:crypto';
import { exec, type Tx } from '../../platform/database/tx.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import type { EventBatchRun } from '../ingest/carrier-event-handlers.js';
import type { OwnersOf } from '../numbers/phone-numbers.service.js';
import type { CarrierName, FailureReason } from '../../carriers/normalized-event.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { DispatchMessageJob, DispatchReplyJob } from './messaging.jobs.js';
import { HELD } from '../numbers/phone-numbers.service.js';
import { burstToleranceSql, countedSendTimeSql } from './sender-pacing.js';
import { sendRateSql } from '../numbers/send-rates.js';
import type { CustomerEventType } from '../webhooks/event-types.js';
import { MessageEffects, type MessageRow } from './message-effects.js';
import type { SettledBy } from '../billing/usage-cause.dto.js';
import { OptOutKeywords, optedOutSql } from './opt-out-keywords.js';
import { MESSAGE_COLUMNS, TERMINAL_STATUSES, toView, UNSENT_STATUSES, WAITING_STATUSES, type MessageStatus, type MessageView } from './message-view.js';
import { newJobsCount } from '../../platform/outbox/statement-jobs.js';

/** Runs of the transactional claim statement before it gives up on a number whose opt-outs keep changing under it (the second never should: see claimForDispatch). */
const CLAIM_RUNS = 3;

import { OUTCOME_UNKNOWN, RECEIPT_BEFORE_ANSWER, SendResolution } from './message-history-details.js';

export { OUTCOME_UNKNOWN, SendResolution } from './message-history-details.js';
/** WAITING_STATUSES as SQL literals (fixed words): a partial index's predicate then matches them in any plan. */
const WAITING_SQL = WAITING_STATUSES.map((status) => `'${status}'`).join(', ');
/** The columns of a MESSAGE_COLUMNS row, by name (a union of moves reads these from each side). */
const MOVE_VIEW_COLUMNS = `id, record_type, direction, "from", "to", text, status, segments, encoding, carrier, carrier_message_id, error_code, error_detail,
  send_at, expected_send_at, created_at, updated_at, account_id`;
/** How many times a message whose sends the carrier never shows is sent again before it fails. */
export const MAX_RESENDS_AFTER_NOTHING_FOUND = 3;

/** What a resolver's run does when the carrier showed nothing (continueResolving). */
export type ResolveStep = 'resend' | 'wait' | 'failed' | 'refused' | 'gone';

/** Why a message was failed instead of taken for sending: its recipient opted out (the dispatch guard's refusal, on every path). */
const REFUSED_OPTED_OUT = { code: 'recipient_opted_out', detail: 'the recipient replied with an opt-out keyword' } as const;

/**
 * How a message the carrier failed because its recipient opted out at the carrier (FailureReason
 * `recipient_opted_out`, in a send's answer or a receipt) shows it: `recipient_opted_out`, as the
 * dispatch guard's refusal does, with the carrier's own code and words in the detail.
 */
function carrierOptOutFailure(errorCode: string | undefined, errorDetail: string | undefined): { errorCode: string; errorDetail: string } {
  return { errorCode: REFUSED_OPTED_OUT.code, errorDetail: [errorCode, errorDetail].filter(Boolean).join(': ') };
}

/** A receipt's error as the receipt statement's input columns. */
function toErrorColumns(error: { errorCode?: string; errorDetail?: string }): { error_code: string | null; error_detail: string | null } {
  return { error_code: error.errorCode ?? null, error_detail: error.errorDetail ?? null };
}

/** The customer events a receipt's move announces: `message.<the status it moved to>`. */
const RECEIPT_EVENT_TYPES = ['message.sent', 'message.delivered', 'message.failed'] as const satisfies readonly CustomerEventType[];

/** A delivery receipt, in our words. */
export interface Receipt {
  carrier: CarrierName;
  carrierMessageId: string;
  /** The final word it reports; null for a word that moves nothing (queued, sending, unknown). */
  status: 'sent' | 'delivered' | 'failed' | null;
  /** The carrier's own word, kept in the note of a receipt that changed nothing. */
  carrierStatus: string;
  errorCode?: string;
  errorDetail?: string;
  /** The carrier's code in our words (a failed receipt's "recipient opted out" records the opt-out). */
  reason?: FailureReason;
  /** Our message id, as the carrier echoed our reference: the receipt names the message even before we know the carrier's id. */
  ourMessageId?: string;
  /** The carrier's id of the event, and when it says it happened: the cause of a charge the receipt settles. */
  carrierEventId?: string;
  occurredAt?: string;
}

export interface Inbound {
  id: string;
  carrier: CarrierName;
  carrierMessageId: string;
  from: string;
  to: string;
  text: string;
  segments: number;
  encoding: string;
  /** The carrier's id of the event, and when it says it happened: the cause of the charge. */
  carrierEventId?: string;
  occurredAt?: string;
}

/** The lease `locked` found, and the claim when the UPDATE took it (all NULL when it did not). */
type ClaimRow = { holder: string | null; held_until: Date | null } & (
  | (DispatchClaim & { previous: MessageStatus; became_unknown: boolean })
  | { [K in keyof DispatchClaim | 'previous' | 'became_unknown']: null }
);

/** What dispatch needs to call the carrier, and the token its answer is recorded under. */
export interface DispatchClaim {
  id: string;
  from_number: string;
  to_number: string;
  text: string;
  carrier: CarrierName;
  /** This run's lease: markSent/markRejected record only under the message's current token. */
  token: string;
  /**
   * Since when a send of this message may have reached the carrier with its answer lost (set by
   * the run that lost it, or by this claim when it took over a lease that ended without being
   * given back); null when no attempt so far can have been taken. Not null: resolve, never resend.
   */
  unknown_since: Date | null;
}

/** A run's right to record the carrier's answer for one message. */
export type DispatchLease = Pick<DispatchClaim, 'id' | 'token'>;

/**
 * What a dispatch run may do: call the carrier under its claim; leave the message to the run that
 * holds its lease until `until`; leave it to its send slot `at` (a job is due then); or nothing
 * (gone, or past sending).
 */
export type DispatchClaimOutcome =
  | { kind: 'claimed'; claim: DispatchClaim }
  | { kind: 'leased'; holder: string; until: Date }
  | { kind: 'paced'; at: Date }
  | { kind: 'done' };

/** The claim statement's one row: what `locked` found (all NULL when nothing), and the claim when the UPDATE took it. */
type ClaimStatementRow = ClaimRow & {
  locked_id: string | null;
  refused: boolean | null;
  lease_live: boolean | null;
  slot_at: Date | null;
  /** The number's opt_out_seq changed while the statement waited for its row: it took and wrote nothing. */
  consent_changed: boolean | null;
  present: boolean;
  jobs: number;
};

/** The claim statement's outcome: a decision, or `consent_changed` (nothing written; run the statement again). */
type ClaimStatementOutcome = DispatchClaimOutcome | { kind: 'consent_changed' };

function claimOutcome(row: ClaimStatementRow): ClaimStatementOutcome {
  const { locked_id: lockedId, holder, held_until: heldUntil, refused, lease_live: leaseLive, slot_at: slotAt, consent_changed: consentChanged, present: _present, jobs: _jobs, ...taken } = row;
  if (consentChanged) return { kind: 'consent_changed' };
  if (lockedId === null || refused) return { kind: 'done' };
  if (taken.id === null) {
    // not taken: a live lease (held_until > now()), or a slot still to come (its job is due then)
    if (leaseLive) return { kind: 'leased', holder: holder!, until: heldUntil! };
    return { kind: 'paced', at: slotAt! };
  }
  const { previous: _previous, became_unknown: _becameUnknown, ...claim } = taken;
  return { kind: 'claimed', claim };
}

/**
 * Every change of a message's status. Each is one UPDATE whose WHERE clause is the guard; the
 * status history is written in the same transaction, and what the move bills and announces
 * (MessageEffects) too, only when that UPDATE changed a row. A duplicate or contradictory carrier
 * report changes nothing.
 */
@Injectable()
export class MessageTransitions {
  constructor(
    private readonly effects: MessageEffects,
    private readonly keywords: OptOutKeywords,
    private readonly outbox: OutboxService,
    private readonly dataSource: DataSource,
  ) {}

  /**
   * Claims an outbound message for one carrier call, under a fresh token leased for
   * `leaseSeconds`: queued|scheduled → sending (history, no event, no charge). A message already
   * `sending` is claimed again only once its lease has ended (the run holding it died or stalled
   * past it); while the lease lasts another run must not call the carrier (Twilio ignores
   * Idempotency-Key: that would be a second SMS); taken again, it is paced like any send.
   *
   * Pacing: a waiting message first takes a send slot from its number (segments / rate after the
   * number's last one, never inside a carrier's pause), by the same statement. A slot that is now,
   * or at most the burst allowance ahead (SEND_BURST_SECONDS less one message: what a number under
   * its rate never waits a relay pass for), is claimed at once if the sends claimed so far leave room
   * for it; a later one is kept on the message with a dispatch job due then (the outbox row is the
   * truth: a Redis that loses the job only delays it), and this run sends nothing.
   *
   * Dispatch runs it as ONE autocommit statement (claimNow): the number's row is then held only
   * until that statement's own commit, never while the client sends a COMMIT (a busy process
   * would hold every other claim of the number, and the connections they wait on, that long).
   * This transactional form is claimNow's fallback for a message row another transaction holds,
   * and for a claimNow whose number's consent changed while it waited for the number's row.
   */
  async claimForDispatch(tx: Tx, messageId: string, leaseSeconds: number, rateOverride?: number): Promise<DispatchClaimOutcome> {
    // The message's row first, alone: the statement that decides then reads the opt-outs with a
    // snapshot taken after any wait for this row, so a STOP committed before the claim (even one
    // committed while a twin held the row) is seen and refuses the send.
    await exec(tx, `SELECT FROM messages WHERE id = $1 FOR UPDATE`, [messageId]);
    // A STOP/START that committed while the statement waited for the number's row (another
    // claim held it) is not in its snapshot: it then wrote nothing, and runs again with a fresh
    // one. That run cannot be told so again: this transaction now holds the number's row, and a
    // keyword statement bumping it waits for our commit (so it comes after this claim).
    for (let run = 1; ; run++) {
      const stmt = this.claimStatement(messageId, leaseSeconds, rateOverride, 'FOR UPDATE OF m');
      const { rows } = await exec<ClaimStatementRow>(tx, stmt.sql, stmt.params);
      this.outbox.jobsWritten(rows[0].jobs, tx);
      const outcome = claimOutcome(rows[0]);
      if (outcome.kind !== 'consent_changed') return outcome;
      if (run === CLAIM_RUNS) throw new Error(`dispatch claim of ${messageId}: the number's opt-outs changed under ${run} runs of the statement`);
    }
  }

  /**
   * claimForDispatch as one autocommit statement, which locks the message's row itself: skipped
   * when another transaction holds it (a twin claim, a cancel, a recording), so the statement's
   * snapshot never predates a wait for that row (a STOP committed meanwhile would go unseen).
   * Undefined then: the caller runs claimForDispatch, which waits for the row. Undefined too when
   * a STOP/START of the number committed while the statement waited for the number's row (it
   * took and wrote nothing): claimForDispatch runs it again, and decides (see there).
   */
  async claimNow(messageId: string, leaseSeconds: number, rateOverride?: number): Promise<DispatchClaimOutcome | undefined> {
    const stmt = this.claimStatement(messageId, leaseSeconds, rateOverride, 'FOR UPDATE OF m SKIP LOCKED');
    const { rows } = await exec<ClaimStatementRow>(this.dataSource.manager, stmt.sql, stmt.params);
    this.outbox.jobsWritten(rows[0].jobs);
    if (rows[0].locked_id === null && rows[0].present) return undefined;
    const outcome = claimOutcome(rows[0]);
    return outcome.kind === 'consent_changed' ? undefined : outcome;
  }

  /** The claim statement: `lockMessage` is the locking clause `locked` takes the message's row with. */
  private claimStatement(messageId: string, leaseSeconds: number, rateOverride: number | undefined, lockMessage: string): { sql: string; params: unknown[] } {
    const stmt = new CteStatement();
    const [id, unsent, waiting] = [stmt.param(messageId, 'text'), stmt.param(UNSENT_STATUSES, 'text[]'), stmt.param(WAITING_STATUSES, 'text[]')];
    const rate = sendRateSql('p', stmt.param(rateOverride ?? null, 'numeric'));
    // `reclaim`: `sending` under a lease that ended or was given back (the run holding it died,
    // stalled or failed): taken again, and paced like any send (a recovery that sends at once
    // would burst: every lease a dead worker held ends together). `refused`: a take that would
    // put the message on the wire, whose recipient has opted out: one not yet picked up, or a
    // reclaim whose earlier attempts the carrier did not take (its lease given back, its outcome
    // not unknown: a retry after a 503, 429 or a connection never made). A reclaim that may have
    // reached the carrier is taken to be resolved, never sent from here: its resend decides
    // consent (continueResolving). A keyword reply is the confirmation, sent whatever the consent.
    const reclaim = `(m.status = 'sending' AND (m.claimed_until IS NULL OR m.claimed_until <= now()))`;
    const sendsAtOnce = `(m.status = ANY(${waiting}) OR (m.status = 'sending' AND m.claimed_until IS NULL AND m.outcome_unknown_since IS NULL))`;
    stmt.with(
      'locked',
      `SELECT m.id AS locked_id, m.status AS previous, m.claim_token AS holder, m.claimed_until AS held_until, m.send_slot AS held_slot, p.id AS number_id,
              m.outcome_unknown_since AS was_unknown,
              p.opt_out_seq AS seen_seq, m.segments AS msg_segments, m.from_number AS sender_number, m.account_id AS sender_account,
              make_interval(secs => (m.segments / ${rate})::float8) AS unlocked_spacing, ${burstToleranceSql(rate)} AS unlocked_burst,
              (m.auto_reply IS NULL AND ${sendsAtOnce} AND ${optedOutSql('m.account_id', 'm.from_number', 'm.to_number')}) AS refused,
              ${reclaim} AS reclaim, m.auto_reply IS NOT NULL AS priority
         FROM messages m LEFT JOIN phone_numbers p ON p.phone_number = m.from_number AND p.account_id = m.account_id AND p.${HELD}
        WHERE m.id = ${id} AND m.direction = 'outbound' AND m.status = ANY(${unsent}) ${lockMessage}`,
    );
    // The number's row, locked for a message to be sent: a claim for another message of the same
    // number waits here, then reads what that one left (FOR UPDATE returns the newest version),
    // so no two messages share a slot and no two sends break the burst bound. `seen_seq` (above,
    // unlocked) is the number's opt_out_seq in this statement's snapshot; `locked_seq` is that of
    // the newest version, locked here. They differ only when a STOP/START concerning the number
    // committed while this statement waited for the row: its snapshot, and so `refused`, cannot
    // see it, so the statement takes and writes nothing (`consent_changed`) and is run again. A
    // claim that waited behind another claim's slot update finds the same seq and goes on. The
    // number's rate too is read here, from the locked row: one changed (PATCH) while this statement
    // waited would otherwise space this send, and burst it, at the old rate (`unlocked_*` above
    // only serve a message with no number of ours, when nothing is locked).
    stmt.with(
      'num',
      `SELECT p.id AS num_id, p.next_send_at, p.send_paused_until, p.sends_paced_until, p.opt_out_seq AS locked_seq,
              make_interval(secs => (l.msg_segments / ${rate})::float8) AS spacing, ${burstToleranceSql(rate)} AS burst
         FROM phone_numbers p JOIN locked l ON p.id = l.number_id
        WHERE (l.previous = ANY(${waiting}) OR l.reclaim) AND (NOT l.refused OR l.held_slot IS NOT NULL) FOR UPDATE OF p`,
    );
    // The decision, from the locked row. `within_burst`: the sends claimed so far, spaced at the
    // rate, leave room for one more now. A new slot: after the number's last one, never inside a
    // pause, and no sooner than the burst allowance leaves room; taken by a message to be sent (the
    // number's row is locked only for those) without one, by one whose slot fell inside a carrier's
    // pause (429 Retry-After: read from the locked row, for a pause committed while this statement
    // waited for it is one its snapshot cannot see), and by one whose slot fell due together with
    // others (jobs ran late) and finds no room (it goes behind the queue rather than every such
    // message waking at the same moment). `due`: the slot is at most the burst allowance ahead (a
    // slot that close is sent now, never through a relay pass: sending it early stays within the
    // burst bound) and the number is not paused.
    // `keeps_place`: a waiting message's due slot that finds no room only because the sends before
    // it were claimed a little late (its slot is at most one spacing before room opens: the next in
    // line) waits for that room, at its place: no new place at the end of the queue, which would
    // leave its own slot empty (a gap in the number's sends) and send it after everything queued
    // since. (A reclaim's slot went to its first attempt: a new send takes a new place.)
    // `yields`: a waiting message whose slot is due while the message just ahead of it in the
    // number's queue (a compliance reply, or one queued before it: a smaller id) still waits with a
    // slot within one spacing before its own (or half a spacing after): that one was moved onto
    // this slot (a reply took the room before it, and it waited at its place) and goes first; this
    // one waits at its place (no new place at the end of the queue): one spacing when the number
    // has room now, else until the room (the one ahead, seen waiting by this statement's snapshot,
    // may have taken it while this statement waited for the number's row: no slot is lost). So a
    // reply moves nobody: the backlog behind it steps back one spacing each as it falls due, in
    // order. (Read from the snapshot: it orders sends; the rate bound is the locked row's.)
    // `may_send`: waiting or a reclaim, due, with room in the burst, not yielding.
    stmt.with(
      'paced',
      `SELECT d.*, (NOT d.refused AND NOT d.consent_changed AND d.due AND d.within_burst AND NOT d.yields AND (d.previous = ANY(${waiting}) OR d.reclaim)) AS may_send,
              (d.refused AND NOT d.consent_changed AND d.num_id IS NOT NULL AND d.held_slot IS NOT NULL) AS gives_back
         FROM (SELECT l.*, n.num_id, n.sends_paced_until, n.send_paused_until AS paused_until, r.spacing, r.burst, x.new_slot, k.keeps_place, y.yields, c.clk, b.within_burst,
                      coalesce(x.new_slot, l.held_slot) AS slot_at, coalesce(n.locked_seq <> l.seen_seq, false) AS consent_changed,
                      (coalesce(x.new_slot, l.held_slot) IS NULL OR (coalesce(x.new_slot, l.held_slot) <= c.clk + r.burst AND NOT coalesce(n.send_paused_until > c.clk, false))) AS due
                 FROM locked l LEFT JOIN num n ON true
                 CROSS JOIN LATERAL (SELECT clock_timestamp() AS clk) c
                 CROSS JOIN LATERAL (SELECT coalesce(n.spacing, l.unlocked_spacing) AS spacing, coalesce(n.burst, l.unlocked_burst) AS burst) r
                 CROSS JOIN LATERAL (SELECT n.num_id IS NULL OR greatest(n.sends_paced_until, c.clk) <= c.clk + r.burst AS within_burst) b
                 CROSS JOIN LATERAL (
                   SELECT coalesce(l.previous = ANY(${waiting}) AND NOT l.priority AND n.num_id IS NOT NULL AND l.held_slot <= c.clk + r.burst
                                   AND NOT coalesce(n.send_paused_until > c.clk, false)
                                   AND EXISTS (SELECT FROM messages q
                                                WHERE q.from_number = l.sender_number AND q.account_id = l.sender_account AND q.direction = 'outbound'
                                                  AND q.status IN (${WAITING_SQL}) AND q.id <> l.locked_id
                                                  AND q.send_slot > l.held_slot - r.spacing AND q.send_slot < l.held_slot + r.spacing / 2
                                                  AND (q.auto_reply IS NOT NULL OR q.id COLLATE "C" < l.locked_id COLLATE "C")), false) AS yields
                 ) y
                 CROSS JOIN LATERAL (
                   SELECT coalesce(l.previous = ANY(${waiting}) AND NOT b.within_burst AND l.held_slot <= c.clk + r.burst AND l.held_slot >= n.sends_paced_until - r.burst - 1.5 * r.spacing
                                   AND NOT coalesce(l.held_slot < n.send_paused_until, false), false) AS keeps_place
                 ) k
                 CROSS JOIN LATERAL (
                   SELECT CASE WHEN n.num_id IS NOT NULL AND NOT l.refused AND n.locked_seq = l.seen_seq AND y.yields
                               THEN CASE WHEN b.within_burst THEN greatest(l.held_slot + r.spacing, c.clk + r.spacing / 2)
                                         ELSE greatest(n.send_paused_until, n.sends_paced_until - r.burst) END
                               WHEN n.num_id IS NOT NULL AND NOT l.refused AND n.locked_seq = l.seen_seq
                                    AND (l.held_slot IS NULL OR l.held_slot < n.send_paused_until OR (l.held_slot <= c.clk + r.burst AND NOT b.within_burst))
                               THEN greatest(CASE WHEN NOT l.priority AND NOT k.keeps_place THEN n.next_send_at END, n.send_paused_until, c.clk, n.sends_paced_until - r.burst) END AS new_slot
                 ) x) d`,
    );
    // ONE UPDATE of the number's row (locked above): the slot handed out (a place kept, or a yield, takes none),
    // the send counted: at its slot when it is claimed at most SEND_LATENESS_TOLERANCE_SECONDS after
    // it (a job's usual delay is no reason to push every later send back), else when it is claimed.
    stmt.with(
      'num_moved',
      `UPDATE phone_numbers p SET next_send_at = CASE WHEN pc.new_slot IS NOT NULL AND NOT pc.keeps_place AND NOT pc.yields THEN greatest(p.next_send_at, pc.new_slot) + pc.spacing
                                                      WHEN pc.gives_back AND p.next_send_at > pc.held_slot THEN p.next_send_at - pc.spacing
                                                      ELSE p.next_send_at END,
              sends_paced_until = CASE WHEN pc.may_send THEN greatest(pc.sends_paced_until, ${countedSendTimeSql('pc.clk', 'pc.slot_at')}) + pc.spacing ELSE p.sends_paced_until END
         FROM paced pc WHERE p.id = pc.num_id AND (pc.new_slot IS NOT NULL OR pc.may_send OR pc.gives_back)
       RETURNING p.sends_paced_until AS paced_until_after`,
    );
    const moved = this.successorCtes(stmt);
    const refused = stmt.with(
      'refused',
      `UPDATE messages m SET status = 'failed', error_code = ${stmt.param(REFUSED_OPTED_OUT.code, 'text')}, error_detail = ${stmt.param(REFUSED_OPTED_OUT.detail, 'text')},
              claimed_until = NULL, updated_at = now()
         FROM paced WHERE m.id = paced.locked_id AND paced.refused AND NOT paced.consent_changed
       RETURNING ${MESSAGE_COLUMNS}`,
    );
    this.sideEffectsCtes(stmt, refused, { status: 'failed', type: 'message.failed' });
    // The UPDATE's WHERE is the guard: a message not yet picked up, or one whose lease has ended, whose slot is due.
    // A lease that ended without being given back (`held_until` still set: its run died, stalled,
    // or is waiting on a send whose outcome is unknown) may have had its send reach the carrier:
    // the message's outcome is unknown from now on (kept if already), and this run resolves it
    // before any resend (DispatchMessageHandler).
    stmt.with(
      'claimed',
      `UPDATE messages m SET status = 'sending', claim_token = ${stmt.param(randomUUID(), 'text')}, claimed_until = now() + make_interval(secs => ${stmt.param(leaseSeconds, 'int')}),
              outcome_unknown_since = CASE WHEN paced.reclaim AND paced.held_until IS NOT NULL THEN coalesce(m.outcome_unknown_since, now()) ELSE m.outcome_unknown_since END,
              send_slot = coalesce(paced.slot_at, m.send_slot), updated_at = CASE WHEN paced.previous = ANY(${waiting}) THEN now() ELSE m.updated_at END
         FROM paced WHERE m.id = paced.locked_id AND paced.may_send
       RETURNING m.id, m.from_number, m.to_number, m.text, m.carrier, m.claim_token AS token, m.outcome_unknown_since AS unknown_since, paced.previous,
                 (paced.reclaim AND paced.held_until IS NOT NULL AND paced.was_unknown IS NULL) AS became_unknown`,
    );
    // Its `sending` history in the same statement: the number's row is held only until this
    // statement's commit, never across another round trip. One for every take that goes on the
    // wire (a first take; a retry of a send the carrier did not take: verify's
    // messaging.no_send_after_opt_out reads them). A lease taken over with its outcome newly
    // unknown says so on the history (it is resolved, not sent, from here).
    stmt.with(
      'claim_history',
      `INSERT INTO message_status_history (message_id, status, detail)
       SELECT id, 'sending', NULL FROM claimed WHERE unknown_since IS NULL
       UNION ALL SELECT id, 'sending', ${stmt.param(`${OUTCOME_UNKNOWN}: the run holding the send ended without recording an answer`, 'text')} FROM claimed WHERE became_unknown`,
    );
    // Not now: a new slot still to come, kept on the message (a reclaim stays `sending`, its lease
    // ended), with a dispatch job due then.
    const slotted = stmt.with(
      'slotted',
      `UPDATE messages m SET send_slot = paced.new_slot FROM paced
        WHERE m.id = paced.locked_id AND paced.new_slot > paced.clk AND NOT paced.may_send AND NOT paced.refused
       RETURNING m.id AS slotted_id, m.send_slot AS wake_at`,
    );
    // A job at each slot still to come: the new one; one held, when this run came before it (its
    // slot moved later since its job was written); and that of the one message moved up (successorCtes).
    const waking = stmt.with(
      'waking',
      `SELECT slotted_id, wake_at, (SELECT priority FROM paced) AS reply FROM ${slotted}
       UNION ALL SELECT locked_id, held_slot, priority FROM paced
        WHERE paced.new_slot IS NULL AND paced.held_slot > paced.clk AND NOT paced.may_send AND NOT paced.refused AND NOT paced.consent_changed
          AND (paced.previous = ANY(${waiting}) OR paced.reclaim)
       UNION ALL SELECT pulled_id, pulled_slot, pulled_reply FROM ${moved}`,
    );
    // A compliance reply's in the replies' own queue (DispatchReplyJob), any other message's in `messaging`.
    // jobsFromCte takes a CTE of the rows to write jobs for (it adds its own WHERE): one per queue.
    for (const [cte, job, reply] of [['slotted_job', DispatchMessageJob, false], ['slotted_reply_job', DispatchReplyJob, true]] as const) {
      const rows = stmt.with(`${cte}_rows`, `SELECT slotted_id, wake_at FROM ${waking} WHERE reply = ${reply}`);
      this.outbox.jobsFromCte(stmt, cte, rows, job, {
        id: `'dispatch-' || slotted_id || '-at-' || (extract(epoch FROM wake_at) * 1000000)::bigint`,
        data: `jsonb_build_object('messageId', slotted_id)`,
        runAt: 'wake_at',
      });
    }
    // One row whatever happened: `present` tells a message row skipped (locked elsewhere) from one that is gone or past sending.
    const sql = stmt.text(
      `SELECT paced.locked_id, paced.holder, paced.held_until, paced.refused, paced.previous = 'sending' AND NOT paced.reclaim AS lease_live, paced.slot_at, paced.consent_changed,
              EXISTS (SELECT FROM messages WHERE id = ${id} AND direction = 'outbound' AND status = ANY(${unsent})) AS present,
              (${newJobsCount(stmt)})::int AS jobs, claimed.*
         FROM (VALUES (1)) AS one (n) LEFT JOIN paced ON true LEFT JOIN claimed ON claimed.id = paced.locked_id`,
    );
    return { sql, params: stmt.params };
  }

  /**
   * The one waiting message of the number that follows the decided one in its queue (by slot,
   * then id), moved up when the decision left room before it, by the claim statement. Never more
   * than that one row (and its one job), whatever the backlog: the message moved up moves the next
   * one up in turn when it is claimed, so a gap closes one send at a time.
   * - A message a STOP refused gives its slot back: the next waiting message after it (SKIP
   *   LOCKED: one whose own claim holds its row waits for the number's row behind this statement;
   *   it keeps its slot, and the next one moves instead) moves up by the refused one's spacing, or
   *   into the refused slot when the number has room there.
   * - A send claimed: the next waiting message (first in the queue, left alone when its own claim
   *   holds its row) whose slot lies more than half a spacing after the time the rate gives the
   *   number's next send (`sends_paced_until` as this statement leaves it, never inside a pause)
   *   moves up to that time: the gap a refused (or cancelled) message left is closed.
   * After the number's row is locked (they read `paced`). Returns the CTE of the moved one (pulled_id, pulled_slot, pulled_reply).
   */
  private successorCtes(stmt: CteStatement): string {
    const sameNumber = `q.from_number = (SELECT sender_number FROM paced) AND q.account_id = (SELECT sender_account FROM paced)
          AND q.direction = 'outbound' AND q.status IN (${WAITING_SQL}) AND q.id <> (SELECT locked_id FROM paced)`;
    stmt.with(
      'freed_next',
      `SELECT q.id AS succ_id, least(q.send_slot - pc.spacing, greatest(pc.held_slot, pc.clk, pc.sends_paced_until - pc.burst, pc.paused_until)) AS target
         FROM messages q, paced pc
        WHERE q.id = (SELECT q.id FROM messages q WHERE ${sameNumber} AND (SELECT gives_back FROM paced) AND q.send_slot > (SELECT held_slot FROM paced)
                        ORDER BY q.send_slot, q.id LIMIT 1 FOR UPDATE OF q SKIP LOCKED)`,
    );
    // The room the claim leaves: the number's sends spaced at the rate end there.
    stmt.with(
      'sent_next',
      `SELECT q.id AS succ_id, greatest(nm.paced_until_after, pc.paused_until) AS target
         FROM messages q, paced pc, num_moved nm
        WHERE q.id = (SELECT q.id FROM messages q WHERE ${sameNumber} AND (SELECT may_send FROM paced) AND q.send_slot >= (SELECT slot_at FROM paced)
                        ORDER BY q.send_slot, q.id LIMIT 1)
          AND q.status IN (${WAITING_SQL}) AND q.send_slot > greatest(nm.paced_until_after, pc.paused_until) + pc.spacing / 2
        FOR UPDATE OF q SKIP LOCKED`,
    );
    return stmt.with(
      'pulled',
      `UPDATE messages o SET send_slot = s.target
         FROM (SELECT * FROM freed_next UNION ALL SELECT * FROM sent_next) s WHERE o.id = s.succ_id AND s.target < o.send_slot
       RETURNING o.id AS pulled_id, o.send_slot AS pulled_slot, o.auto_reply IS NOT NULL AS pulled_reply`,
    );
  }

  /**
   * The carrier answered 429 (too fast) to a run holding the lease: the message goes back to
   * `queued` (history, no event, no charge), its number pauses for the carrier's Retry-After (no
   * slot starts before then, and slots already given inside the pause are taken again), and a
   * dispatch job is due at the pause's end. Under this run's token only: nothing is sent twice,
   * nothing lost. Returns when the message will be tried again, or undefined when the lease was
   * no longer this run's.
   */
  async requeueThrottled(tx: Tx, lease: DispatchLease, retryAfterSeconds: number): Promise<Date | undefined> {
    const stmt = new CteStatement();
    const pause = `clock_timestamp() + make_interval(secs => ${stmt.param(retryAfterSeconds, 'float8')})`;
    // sending under this run's token: a lease another run has taken since is left alone.
    const back = stmt.with(
      'throttled',
      `UPDATE messages SET status = 'queued', claimed_until = NULL, send_slot = NULL, updated_at = now()
        WHERE id = ${stmt.param(lease.id, 'text')} AND status = 'sending' AND claim_token = ${stmt.param(lease.token, 'text')}
       RETURNING id AS throttled_id, account_id AS throttled_account, from_number AS throttled_from`,
    );
    stmt.with(
      'paused',
      `UPDATE phone_numbers p SET send_paused_until = greatest(p.send_paused_until, ${pause}) FROM ${back} t
        WHERE p.phone_number = t.throttled_from AND p.account_id = t.throttled_account AND p.${HELD}
       RETURNING p.send_paused_until`,
    );
    stmt.with('throttled_history', `INSERT INTO message_status_history (message_id, status) SELECT throttled_id, 'queued' FROM ${back}`);
    const resume = stmt.with('resume', `SELECT throttled_id, coalesce((SELECT send_paused_until FROM paused), ${pause}) AS resume_at FROM ${back}`);
    this.outbox.jobsFromCte(stmt, 'resume_job', resume, DispatchMessageJob, {
      id: `'dispatch-' || throttled_id || '-retry-' || ${stmt.param(lease.token, 'text')}`,
      data: `jsonb_build_object('messageId', throttled_id)`,
      runAt: 'resume_at',
    });
    const { rows } = await exec<{ resume_at: Date | null; jobs: number }>(tx, stmt.text(`SELECT (SELECT resume_at FROM ${resume}) AS resume_at, (${newJobsCount(stmt)})::int AS jobs`), stmt.params);
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return rows[0].resume_at ?? undefined;
  }

  /**
   * Takes back a message dispatch has not picked up: queued|scheduled → cancelled, history and
   * `message.cancelled`, never billed. Undefined when the account has no such message; otherwise
   * the status it found and whether it cancelled it.
   */
  async cancel(tx: Tx, accountId: string, messageId: string): Promise<{ previous: MessageStatus; cancelled: MessageView | undefined } | undefined> {
    // FOR UPDATE in `found`: the dispatch claim locks the same row first, so one of the two goes
    // first and the other sees what it left. The UPDATE's WHERE is the guard: still waiting.
    const stmt = new CteStatement();
    stmt.with(
      'found',
      `SELECT id AS found_id, status AS previous FROM messages
        WHERE id = ${stmt.param(messageId, 'text')} AND account_id = ${stmt.param(accountId, 'text')} AND direction = 'outbound' FOR UPDATE`,
    );
    const cancelled = stmt.with(
      'cancelled',
      `UPDATE messages m SET status = 'cancelled', claimed_until = NULL, updated_at = now() FROM found
        WHERE m.id = found.found_id AND found.previous = ANY(${stmt.param(WAITING_STATUSES, 'text[]')})
       RETURNING ${MESSAGE_COLUMNS}`,
    );
    this.sideEffectsCtes(stmt, cancelled, { status: 'cancelled', type: 'message.cancelled' });
    const { rows } = await exec<{ previous: MessageStatus; jobs: number; message: MessageRow | null }>(
      tx,
      stmt.text(`SELECT found.previous, (${newJobsCount(stmt)})::int AS jobs, (SELECT to_jsonb(c) FROM ${cancelled} c) AS message FROM found`),
      stmt.params,
    );
    if (rows.length === 0) return undefined;
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return { previous: rows[0].previous, cancelled: rows[0].message ? toView(rows[0].message) : undefined };
  }

  /** A run that stopped calling the carrier without an answer gives its lease back, so a retry can claim at once. */
  async releaseClaim(tx: Tx, lease: DispatchLease): Promise<void> {
    // claim_token = this run's: a lease another run has taken since is left alone.
    await exec(tx, `UPDATE messages SET claimed_until = NULL WHERE id = $1 AND status = 'sending' AND claim_token = $2`, [lease.id, lease.token]);
  }

  /**
   * The carrier accepted the message: stamped with its id, billed per segment, `message.sent`.
   * `carrierMessageIds`: the id it answered with, or what a lookup found (the first that no other
   * message of ours carries: a lookup that cannot see our reference may list a twin's too), with
   * `resolution` (SendResolution.byLookup) on the history.
   */
  async markSent(tx: Tx, lease: DispatchLease, carrierMessageIds: string | string[], resolution?: string): Promise<boolean> {
    const ids = typeof carrierMessageIds === 'string' ? [carrierMessageIds] : carrierMessageIds;
    // `found` locks the row (a receipt settling it, a resolver deciding, waits or is waited for)
    // and keeps what it was. The guard: still sending, and under this run's token, or with its
    // outcome unknown (an answer that arrives after the lease was taken over is the carrier's
    // word all the same; one arriving after a resend was decided is not recorded). A second run
    // (crash after the carrier answered) finds it sent already.
    const { rows } = await exec<MessageRow & { was_unknown: Date | null }>(
      tx,
      `WITH found AS (
         SELECT m.id AS found_id, m.outcome_unknown_since AS was_unknown,
                (SELECT c.id FROM unnest($2::text[]) WITH ORDINALITY AS c (id, n)
                  WHERE NOT EXISTS (SELECT FROM messages o WHERE o.carrier = m.carrier AND o.carrier_message_id = c.id AND o.id <> m.id) ORDER BY c.n LIMIT 1) AS pick
           FROM messages m WHERE m.id = $1 AND m.status = 'sending' AND (m.claim_token = $3 OR m.outcome_unknown_since IS NOT NULL) FOR UPDATE OF m)
       UPDATE messages SET status = 'sent', carrier_message_id = found.pick, claimed_until = NULL, outcome_unknown_since = NULL, updated_at = now()
         FROM found WHERE id = found.found_id AND found.pick IS NOT NULL
       RETURNING ${MESSAGE_COLUMNS}, found.was_unknown`,
      [lease.id, ids, lease.token],
    );
    if (rows.length === 0) return false;
    const { was_unknown: wasUnknown, ...message } = rows[0];
    const detail = resolution ?? (wasUnknown ? SendResolution.answeredLate : undefined);
    await this.recordHistory(tx, lease.id, 'sent', detail);
    await this.effects.sent(tx, message, (detail as SettledBy | undefined) ?? 'send_answer');
    return true;
  }

  /**
   * The send of this run got no answer that decides (SendOutcomeUnknownError): the message's
   * outcome is unknown from now (kept if it already was), its history says why, and its lease
   * runs to the first check, when a dispatch job (its own, due then) takes it over to resolve
   * it. Under this run's token only. False when the lease was no longer this run's.
   */
  async markOutcomeUnknown(tx: Tx, lease: DispatchLease, reason: string, windowSeconds: number): Promise<boolean> {
    const stmt = new CteStatement();
    const unknown = stmt.with(
      'unknown',
      `UPDATE messages SET outcome_unknown_since = coalesce(outcome_unknown_since, now()), claimed_until = now() + ${this.checkInterval(stmt, windowSeconds)}, updated_at = now()
        WHERE id = ${stmt.param(lease.id, 'text')} AND status = 'sending' AND claim_token = ${stmt.param(lease.token, 'text')}
       RETURNING id AS waiting_id, claimed_until AS check_at`,
    );
    stmt.with('unknown_history', `INSERT INTO message_status_history (message_id, status, detail) SELECT waiting_id, 'sending', ${stmt.param(`${OUTCOME_UNKNOWN}: ${reason}`, 'text')} FROM ${unknown}`);
    this.checkJobCte(stmt, unknown, lease);
    const { rows } = await exec<{ marked: boolean; jobs: number }>(tx, stmt.text(`SELECT EXISTS (SELECT FROM ${unknown}) AS marked, (${newJobsCount(stmt)})::int AS jobs`), stmt.params);
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return rows[0].marked;
  }

  /**
   * A resolver's run (it holds the lease of a message whose outcome is unknown) found nothing at
   * the carrier. One statement decides, from the locked row and the database clock:
   * - `wait`: the window (SEND_OUTCOME_WINDOW_SECONDS from `outcome_unknown_since`) is not over,
   *   or the lookup could not be made and a second window is not over either: the lease runs to
   *   the next check (a third of the window, never past its end), with a dispatch job due then;
   * - `resend`: the carrier showed nothing for the whole window: the outcome is known to be "not
   *   taken" (cleared, `resent_after_nothing_found` on the history) and this run sends again under
   *   a fresh lease;
   * - `failed`: as resend, but the message was already sent again MAX_RESENDS_AFTER_NOTHING_FOUND
   *   times with nothing ever shown: failed (`carrier_unavailable`), not billed, `message.failed`;
   * - `refused`: as resend, but the recipient has opted out since (a keyword reply excepted):
   *   failed (`recipient_opted_out`, `opted_out_before_resend` on the history), not billed,
   *   `message.failed`, as the dispatch claim refuses a first send;
   * - `gone`: the message is no longer this run's to decide (a receipt or a late answer settled it).
   * A receipt waiting for the row is applied after this commits: on a resend it still settles the
   * message (by our reference), and the second send's answer is then recorded as nothing new.
   *
   * The resend puts the message on the wire, so it decides consent as the claim does: the
   * message's row, then its number's row are locked first (the claim's order), so the deciding
   * statement's snapshot is taken after any STOP/START of the number committed (its statement
   * bumps opt_out_seq on that row), and one committing later waits for this transaction's commit.
   */
  async continueResolving(tx: Tx, lease: DispatchLease, opts: { windowSeconds: number; leaseSeconds: number; lookupFailed: boolean }): Promise<ResolveStep> {
    await exec(tx, `SELECT FROM messages WHERE id = $1 FOR UPDATE`, [lease.id]);
    await exec(
      tx,
      `SELECT FROM phone_numbers p JOIN messages m ON p.phone_number = m.from_number AND p.account_id = m.account_id AND p.${HELD} WHERE m.id = $1 FOR UPDATE OF p`,
      [lease.id],
    );
    const stmt = new CteStatement();
    const window = `make_interval(secs => ${stmt.param(opts.windowSeconds, 'float8')})`;
    const check = this.checkInterval(stmt, opts.windowSeconds);
    // The guard: still sending under this run's token, its outcome still unknown; locked.
    stmt.with(
      'rsv_found',
      `SELECT m.id AS found_id, m.outcome_unknown_since AS since,
              CASE WHEN now() < m.outcome_unknown_since + ${window} OR (${stmt.param(opts.lookupFailed, 'boolean')} AND now() < m.outcome_unknown_since + 2 * ${window}) THEN 'wait'
                   WHEN (SELECT count(*) FROM message_status_history h WHERE h.message_id = m.id AND h.detail = ${stmt.param(SendResolution.resent, 'text')}) >= ${stmt.param(MAX_RESENDS_AFTER_NOTHING_FOUND, 'int')} THEN 'failed'
                   WHEN m.auto_reply IS NULL AND ${optedOutSql('m.account_id', 'm.from_number', 'm.to_number')} THEN 'refused'
                   ELSE 'resend' END AS step
         FROM messages m WHERE m.id = ${stmt.param(lease.id, 'text')} AND m.status = 'sending' AND m.claim_token = ${stmt.param(lease.token, 'text')} AND m.outcome_unknown_since IS NOT NULL
          FOR UPDATE OF m`,
    );
    const resent = stmt.with(
      'rsv_resent',
      `UPDATE messages m SET outcome_unknown_since = NULL, claimed_until = now() + make_interval(secs => ${stmt.param(opts.leaseSeconds, 'int')}), updated_at = now()
         FROM rsv_found f WHERE m.id = f.found_id AND f.step = 'resend' RETURNING m.id`,
    );
    const waiting = stmt.with(
      'rsv_waiting',
      `UPDATE messages m SET claimed_until = CASE WHEN f.since + ${window} > now() THEN least(f.since + ${window}, now() + ${check}) ELSE now() + ${check} END
         FROM rsv_found f WHERE m.id = f.found_id AND f.step = 'wait' RETURNING m.id AS waiting_id, m.claimed_until AS check_at`,
    );
    const failed = stmt.with(
      'rsv_failed',
      `UPDATE messages m SET status = 'failed', error_code = 'carrier_unavailable', claimed_until = NULL, updated_at = now(),
              error_detail = ${stmt.param(`no answer to ${MAX_RESENDS_AFTER_NOTHING_FOUND + 1} sends, and the carrier showed none of them within ${opts.windowSeconds} s`, 'text')}
         FROM rsv_found f WHERE m.id = f.found_id AND f.step = 'failed' RETURNING ${MESSAGE_COLUMNS}`,
    );
    const refused = stmt.with(
      'rsv_refused',
      `UPDATE messages m SET status = 'failed', error_code = ${stmt.param(REFUSED_OPTED_OUT.code, 'text')}, error_detail = ${stmt.param(REFUSED_OPTED_OUT.detail, 'text')},
              claimed_until = NULL, outcome_unknown_since = NULL, updated_at = now()
         FROM rsv_found f WHERE m.id = f.found_id AND f.step = 'refused' RETURNING ${MESSAGE_COLUMNS}`,
    );
    stmt.with(
      'rsv_history',
      `INSERT INTO message_status_history (message_id, status, detail)
       SELECT id, 'sending', ${stmt.param(SendResolution.resent, 'text')} FROM ${resent}
       UNION ALL SELECT id, 'failed', ${stmt.param(SendResolution.gaveUp, 'text')} FROM ${failed}
       UNION ALL SELECT id, 'failed', ${stmt.param(SendResolution.optedOut, 'text')} FROM ${refused}`,
    );
    const ended = stmt.with('rsv_ended', `SELECT * FROM ${failed} UNION ALL SELECT * FROM ${refused}`);
    this.effects.announceCtes(stmt, ended, 'message.failed');
    this.checkJobCte(stmt, waiting, lease);
    const { rows } = await exec<{ step: ResolveStep | null; jobs: number }>(
      tx,
      stmt.text(`SELECT (SELECT step FROM rsv_found) AS step, (${newJobsCount(stmt)})::int AS jobs`),
      stmt.params,
    );
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return rows[0].step ?? 'gone';
  }

  /** A third of the window (at least a second): how often a message whose outcome is unknown is looked up. */
  private checkInterval(stmt: CteStatement, windowSeconds: number): string {
    return `make_interval(secs => ${stmt.param(Math.max(1, windowSeconds / 3), 'float8')})`;
  }

  /** The dispatch job that takes a waiting resolution over at its check (CTE `waiting`: waiting_id, check_at), one per lease. */
  private checkJobCte(stmt: CteStatement, waiting: string, lease: DispatchLease): void {
    this.outbox.jobsFromCte(stmt, 'check_job', waiting, DispatchMessageJob, {
      id: `'dispatch-' || waiting_id || '-check-' || ${stmt.param(lease.token, 'text')}`,
      data: `jsonb_build_object('messageId', waiting_id)`,
      runAt: 'check_at',
    });
  }

  /**
   * The carrier refused the send (its 4xx is an answer): failed, not billed, `message.failed`.
   * Refused because the recipient opted out at the carrier (`reason`): failed as
   * `recipient_opted_out` (the carrier's code in the detail), and the opt-out recorded (source
   * `carrier`, `message.opted_out`) by the same statement, so later sends are refused up front.
   */
  async markRejected(tx: Tx, lease: DispatchLease, refusal: { errorCode: string; errorDetail: string; reason?: FailureReason }): Promise<boolean> {
    const optedOut = refusal.reason === 'recipient_opted_out';
    const { errorCode: code, errorDetail: detail } = optedOut ? carrierOptOutFailure(refusal.errorCode, refusal.errorDetail) : refusal;
    const stmt = new CteStatement();
    // sending under this run's token: a message the carrier accepted is never failed by a late
    // send error, nor by a run whose lease was taken over.
    const failed = stmt.with(
      'rejected',
      `UPDATE messages SET status = 'failed', error_code = ${stmt.param(code, 'text')}, error_detail = ${stmt.param(detail, 'text')}, claimed_until = NULL, updated_at = now()
        WHERE id = ${stmt.param(lease.id, 'text')} AND status = 'sending' AND claim_token = ${stmt.param(lease.token, 'text')} RETURNING ${MESSAGE_COLUMNS}`,
    );
    stmt.with('msg_history', `INSERT INTO message_status_history (message_id, status) SELECT id, 'failed' FROM ${failed}`);
    const consent = optedOut ? this.keywords.carrierOptOutCtes(stmt, failed) : undefined;
    this.effects.announceWithConsentCtes(stmt, failed, 'message.failed', consent);
    const { rows } = await exec<{ failed: boolean; jobs: number }>(tx, stmt.text(`SELECT EXISTS (SELECT FROM ${failed}) AS failed, (${newJobsCount(stmt)})::int AS jobs`), stmt.params);
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return rows[0].failed;
  }

  /**
   * Delivery receipts for messages we sent, as fragments of one statement for a batch of events
   * (no two of one message: the batch's key keeps them apart). A receipt names its message by our
   * reference when the carrier echoed it (`ourMessageId`), else (or when the reference names no
   * message of that carrier's: a client_ref of someone else's) by the carrier's id. A receipt of
   * a final word is ready only once it finds its message (one that outran the dispatcher's commit
   * is retried, never explained away as a duplicate by a later read); it changes nothing (the note
   * says so) for a duplicate, a contradiction after a terminal status, or a 'sent' receipt after
   * markSent (which stamps the carrier id and 'sent' together). A non-final word (status NULL)
   * is always ready and changes nothing, except as below.
   *
   * A receipt (any word: the carrier holds the message) naming a message still `sending` with no
   * carrier id (no answer recorded) settles it: the carrier took it, whatever became of our request's answer. It is stamped with the
   * receipt's carrier id, its outcome is no longer unknown, and it moves as markSent would
   * (billed, `message.sent`, `sent` on the history with `found_by_receipt`, or
   * `receipt_before_answer` when its outcome was not unknown yet), then to the receipt's final
   * word if it has one (history and event of their own), in this same statement.
   *
   * A failed receipt saying the recipient opted out at the carrier (`reason`; Vonage reports it
   * only so) fails the message as `recipient_opted_out` (as markRejected does) and, when its move
   * changed the row, records the opt-out in this same statement (source `carrier`, opt_out_seq
   * bumped, one `message.opted_out` per consent change, announced with the receipts' events).
   */
  applyReceiptCtes(run: EventBatchRun, receipts: Receipt[]): void {
    const { stmt } = run;
    const optedOut = (r: Receipt) => r.status === 'failed' && r.reason === 'recipient_opted_out';
    const input = run.input(
      'carrier text, carrier_message_id text, status text, carrier_status text, error_code text, error_detail text, opted_out boolean, our_message_id text, carrier_event_id text, occurred_at text',
      receipts.map((r) => ({
        carrier: r.carrier, carrier_message_id: r.carrierMessageId, status: r.status, carrier_status: r.carrierStatus,
        ...(optedOut(r) ? toErrorColumns(carrierOptOutFailure(r.errorCode, r.errorDetail)) : toErrorColumns(r)), opted_out: optedOut(r),
        our_message_id: r.ourMessageId ?? null, carrier_event_id: r.carrierEventId ?? null, occurred_at: r.occurredAt ?? null,
      })),
    );
    // `rcpt_found` locks the messages these receipts name, in id order (two batches that share
    // messages never wait on each other crosswise): a twin receipt waits, then sees what this one
    // left (`previous`, `settles`: the locked row's, the newest committed version). Each row
    // carries its receipt's values under names of its own (the UPDATE's RETURNING reads the
    // message's columns unqualified). The ids as arrays too: the messages are found by their
    // primary or unique key, whatever the planner makes of the recordset.
    const looked = receipts.filter((r) => r.status !== null || r.ourMessageId !== undefined);
    stmt.with(
      'rcpt_found',
      `SELECT i.event_id AS rcpt_event_id, m.id AS found_id, m.status AS previous, m.direction = 'outbound' AS outbound,
              m.status = 'sending' AND m.carrier_message_id IS NULL AS settles, i.carrier_message_id AS rcpt_carrier_id,
              CASE WHEN m.status = 'sending' AND m.carrier_message_id IS NULL THEN coalesce(i.status, 'sent') ELSE i.status END AS rcpt_status,
              CASE WHEN m.outcome_unknown_since IS NOT NULL THEN ${stmt.param(SendResolution.byReceipt, 'text')} ELSE ${stmt.param(RECEIPT_BEFORE_ANSWER, 'text')} END AS settle_detail,
              i.error_code AS rcpt_error_code, i.error_detail AS rcpt_error_detail, i.opted_out AS rcpt_opted_out,
              i.carrier_event_id AS rcpt_carrier_event_id, i.occurred_at AS rcpt_occurred_at
         FROM ${input} i JOIN messages m ON m.carrier = i.carrier
              AND (m.id = i.our_message_id
                   OR (m.carrier_message_id = i.carrier_message_id
                       AND (i.our_message_id IS NULL OR NOT EXISTS (SELECT FROM messages r WHERE r.id = i.our_message_id AND r.carrier = i.carrier))))
        WHERE (i.status IS NOT NULL OR i.our_message_id IS NOT NULL)
          AND (m.id = ANY (${stmt.param(looked.flatMap((r) => (r.ourMessageId ? [r.ourMessageId] : [])), 'text[]')})
               OR (m.carrier = ANY (${stmt.param([...new Set(looked.map((r) => r.carrier))], 'text[]')})
                   AND m.carrier_message_id = ANY (${stmt.param(looked.map((r) => r.carrierMessageId), 'text[]')})))
        ORDER BY m.id FOR UPDATE OF m`,
    );
    // The guard, over a locked row `f`: only an outbound message that is not terminal and not
    // already at the receipt's status moves; the first terminal word wins.
    const moves = (f: string) => `${f}.outbound AND ${f}.rcpt_status IS NOT NULL AND ${f}.previous <> ALL(${stmt.param(TERMINAL_STATUSES, 'text[]')}) AND ${f}.previous <> ${f}.rcpt_status`;
    const applied = run.consume({
      ready: (i) => `(${i}.status IS NULL OR EXISTS (SELECT FROM rcpt_found f WHERE f.rcpt_event_id = ${i}.event_id))`,
      notReadyReason: (i) => `'no message carries ' || ${i}.carrier || ' id ' || ${i}.carrier_message_id || coalesce(' or is ' || ${i}.our_message_id, '') || ' yet'`,
      note: (i) =>
        `CASE WHEN NOT EXISTS (SELECT FROM rcpt_found f WHERE f.rcpt_event_id = ${i}.event_id AND ${moves('f')})
              THEN CASE WHEN ${i}.status IS NULL THEN 'carrier status ' || ${i}.carrier_status || ' changes nothing'
                        ELSE 'duplicate or superseded receipt (' || ${i}.carrier_status || ')' END END`,
    });
    const moved = stmt.with(
      'rcpt_moved',
      `UPDATE messages m SET status = f.rcpt_status, error_code = coalesce(f.rcpt_error_code, m.error_code),
              error_detail = coalesce(f.rcpt_error_detail, m.error_detail), updated_at = now(),
              carrier_message_id = CASE WHEN f.settles THEN f.rcpt_carrier_id ELSE m.carrier_message_id END,
              claimed_until = CASE WHEN f.settles THEN NULL ELSE m.claimed_until END,
              outcome_unknown_since = CASE WHEN f.settles THEN NULL ELSE m.outcome_unknown_since END
         FROM rcpt_found f JOIN ${applied} c ON c.consumed_event_id = f.rcpt_event_id
        WHERE m.id = f.found_id AND ${moves('f')}
       RETURNING ${MESSAGE_COLUMNS}, f.settles AS rcpt_settled, f.settle_detail AS rcpt_settle_detail, f.rcpt_opted_out,
                 f.rcpt_event_id, f.rcpt_carrier_event_id, f.rcpt_occurred_at`,
    );
    // Only a batch with an opted-out receipt writes consent (the usual receipt's statement stays as it was).
    const consent = receipts.some(optedOut)
      ? this.keywords.carrierOptOutCtes(stmt, stmt.with('rcpt_opted_out', `SELECT * FROM ${moved} WHERE rcpt_opted_out AND status = 'failed'`))
      : undefined;
    this.receiptSideEffectsCtes(stmt, moved, consent);
  }

  /**
   * What the receipts' moves (CTE `moved`: MESSAGE_COLUMNS, rcpt_settled, rcpt_settle_detail, the receipt's event ids)
   * write beside them. A settled message first as markSent would: billed, `sent` on the history
   * (with how it was settled), `message.sent` showing it sent; then every move to its own status
   * (a settled message that stopped at `sent` has no second one): history and `message.<status>`;
   * announced with the consent changes the moves made (CTE `consent`), in one emission.
   */
  private receiptSideEffectsCtes(stmt: CteStatement, moved: string, consent: string | undefined): void {
    const settled = stmt.with(
      'rcpt_settled',
      `SELECT id, record_type, direction, "from", "to", text, 'sent'::text AS status, segments, encoding, carrier, carrier_message_id,
              NULL::text AS error_code, NULL::text AS error_detail, send_at, expected_send_at, created_at, updated_at, account_id, rcpt_settle_detail,
              rcpt_settle_detail AS settled_by, rcpt_event_id AS cause_event_id, rcpt_carrier_event_id AS cause_carrier_event_id, rcpt_occurred_at AS cause_occurred_at
         FROM ${moved} WHERE rcpt_settled`,
    );
    this.effects.billOutboundCtes(stmt, settled);
    const further = `${moved} WHERE NOT (rcpt_settled AND status = 'sent')`;
    // One INSERT, in order: a settled message's `sent` before its final word.
    stmt.with(
      'msg_history',
      `INSERT INTO message_status_history (message_id, status, detail)
       SELECT id, status, detail FROM (
         SELECT id, status, rcpt_settle_detail AS detail, 0 AS step FROM ${settled}
         UNION ALL SELECT id, status, NULL, 1 FROM ${further}) h ORDER BY id, step`,
    );
    const announced = stmt.with(
      'msg_moves',
      `SELECT s.*, 'message.sent' AS type FROM (SELECT ${MOVE_VIEW_COLUMNS} FROM ${settled}) s
       UNION ALL SELECT f.*, 'message.' || f.status AS type FROM (SELECT ${MOVE_VIEW_COLUMNS} FROM ${further}) f`,
    );
    this.effects.announceTypedCtes(stmt, announced, RECEIPT_EVENT_TYPES, consent);
  }

  /**
   * Inbound messages, as fragments of one statement for a batch of events: each recorded once per
   * carrier message id when a number of ours receives it (`owners`), then billed and announced
   * (MessageEffects).
   */
  receiveInboundCtes(run: EventBatchRun, owners: OwnersOf, inbound: Inbound[]): void {
    const { stmt } = run;
    const input = run.input(
      'message_id text, carrier text, carrier_message_id text, from_number text, to_number text, text text, segments int, encoding text, carrier_event_id text, occurred_at text',
      inbound.map((m) => ({
        message_id: m.id, carrier: m.carrier, carrier_message_id: m.carrierMessageId, from_number: m.from, to_number: m.to, text: m.text, segments: m.segments, encoding: m.encoding,
        carrier_event_id: m.carrierEventId ?? null, occurred_at: m.occurredAt ?? null,
      })),
    );
    const owner = owners(input, 'to_number');
    const applied = run.consume({ note: (i) => `CASE WHEN NOT EXISTS (SELECT FROM ${owner} o WHERE o.event_id = ${i}.event_id) THEN 'no account owns ' || ${i}.to_number END` });
    // ON CONFLICT (carrier, carrier_message_id): a replayed or re-signed delivery inserts nothing.
    const received = stmt.with(
      'msg_received',
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
       SELECT i.message_id, o.account_id, 'inbound', i.from_number, i.to_number, i.text, 'received', i.segments, i.encoding, i.carrier, i.carrier_message_id
         FROM ${input} i JOIN ${owner} o ON o.event_id = i.event_id JOIN ${applied} c ON c.consumed_event_id = i.event_id
       ON CONFLICT (carrier, carrier_message_id) DO NOTHING
       RETURNING ${MESSAGE_COLUMNS}`,
    );
    // Each billed with the event that delivered it as its cause.
    const billed = stmt.with(
      'msg_received_cause',
      `SELECT r.*, i.event_id AS cause_event_id, i.carrier_event_id AS cause_carrier_event_id, i.occurred_at AS cause_occurred_at FROM ${received} r JOIN ${input} i ON i.message_id = r.id`,
    );
    this.effects.billInboundCtes(stmt, billed);
    stmt.with('msg_history', `INSERT INTO message_status_history (message_id, status) SELECT id, 'received' FROM ${received}`);
    // A keyword's consent change is written by this same statement, and announced with the messages.
    const consent = this.keywords.applyCtes(stmt, received);
    this.effects.announceInboundCtes(stmt, received, consent);
  }

  /** The history row and the customer event of a move, for the rows of CTE `changed` (MESSAGE_COLUMNS): every row to one `status`, announced as `type`. */
  private sideEffectsCtes(stmt: CteStatement, changed: string, move: { status: MessageStatus; type: CustomerEventType }): void {
    stmt.with('msg_history', `INSERT INTO message_status_history (message_id, status) SELECT id, ${stmt.param(move.status, 'text')} FROM ${changed}`);
    this.effects.announceCtes(stmt, changed, move.type);
  }

  async recordHistory(tx: Tx, messageId: string, status: MessageStatus, detail?: string): Promise<void> {
    await exec(tx, `INSERT INTO message_status_history (message_id, status, detail) VALUES ($1, $2, $3)`, [messageId, status, detail ?? null]);
  }
}
