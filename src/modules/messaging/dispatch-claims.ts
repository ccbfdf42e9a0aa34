import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { randomUUID } from 'node:crypto';
import { exec, type Tx } from '../../platform/database/tx.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import type { CarrierName } from '../../carriers/normalized-event.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { dispatchJobsFromCte } from './dispatch-jobs.js';
import { HELD } from '../numbers/phone-numbers.service.js';
import { burstToleranceSql, countedSendTimeSql } from './sender-pacing.js';
import { sendRateSql } from '../numbers/send-rates.js';
import { MessageEffects } from './message-effects.js';
import { optedOutSql } from './opt-out-keywords.js';
import { MESSAGE_COLUMNS, UNSENT_STATUSES, WAITING_STATUSES, type MessageStatus } from './message-view.js';
import { newJobsCount } from '../../platform/outbox/statement-jobs.js';
import { OUTCOME_UNKNOWN } from './message-history-details.js';
import { moveSideEffectsCtes, REFUSED_OPTED_OUT } from './message-moves.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';

/** Runs of the transactional claim statement before it gives up on a number whose opt-outs keep changing under it (the second never should: see claimForDispatch). */
const CLAIM_RUNS = 3;
/** WAITING_STATUSES as SQL literals (fixed words): a partial index's predicate then matches them in any plan. */
const WAITING_SQL = WAITING_STATUSES.map((status) => `'${status}'`).join(', ');

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
  /** When the claim statement decided (the database clock): a send made long after may break the burst bound (claimTooOld). */
  decided_at: Date;
}

/** A run's right to record the carrier's answer for one message. */
export type DispatchLease = Pick<DispatchClaim, 'id' | 'token'>;

/**
 * What a dispatch run may do: call the carrier under its claim; leave the message to the run that
 * holds its lease until `until` (a job is due then); leave it to its send slot `at` (a job is due then); or nothing
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
 * The dispatch claim: an outbound message taken for one carrier call under a lease, paced on its
 * number (a send slot, the burst bound), or refused when its recipient opted out, by ONE statement
 * (claimStatement) whose WHERE clauses are the guards; its history, its customer event (a refusal)
 * and the jobs at the slots it hands out commit with it, only when it changed a row.
 */
@Injectable()
export class DispatchClaims {
  constructor(
    private readonly effects: MessageEffects,
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
    await exec(tx, `SELECT FROM messages WHERE id = $1 AND ${idKeyOf('$1')} FOR UPDATE`, [messageId]);
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
        WHERE m.id = ${id} AND ${idKeyOf(id, 'm.id')} AND m.direction = 'outbound' AND m.status = ANY(${unsent}) ${lockMessage}`,
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
    // the send counted (countedSendTimeSql): at its slot when it is claimed at most SEND_LATENESS_TOLERANCE_SECONDS
    // (and a quarter spacing) after it, or ahead of it (a job's usual delay is no reason to push every later send
    // back), else when it is claimed; never before the number's sends counted so far end.
    stmt.with(
      'num_moved',
      `UPDATE phone_numbers p SET next_send_at = CASE WHEN pc.new_slot IS NOT NULL AND NOT pc.keeps_place AND NOT pc.yields THEN greatest(p.next_send_at, pc.new_slot) + pc.spacing
                                                      WHEN pc.gives_back AND p.next_send_at > pc.held_slot THEN p.next_send_at - pc.spacing
                                                      ELSE p.next_send_at END,
              sends_paced_until = CASE WHEN pc.may_send THEN greatest(pc.sends_paced_until, ${countedSendTimeSql('pc.clk', 'pc.slot_at', 'pc.spacing')}) + pc.spacing ELSE p.sends_paced_until END
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
    moveSideEffectsCtes(this.effects, stmt, refused, { status: 'failed', type: 'message.failed' });
    // The UPDATE's WHERE is the guard: a message not yet picked up, or one whose lease has ended, whose slot is due.
    // A lease that ended without being given back (`held_until` still set: its run died, stalled,
    // or is waiting on a send whose outcome is unknown) may have had its send reach the carrier:
    // the message's outcome is unknown from now on (kept if already), and this run resolves it
    // before any resend (DispatchMessageHandler). A send of a number of ours keeps, as its slot,
    // the time the number's rate counted it at (its pacing, num_moved): each claimed send's slot
    // then lies at least its spacing after the one before, whatever place it waited at.
    stmt.with(
      'claimed',
      `UPDATE messages m SET status = 'sending', claim_token = ${stmt.param(randomUUID(), 'text')}, claimed_until = now() + make_interval(secs => ${stmt.param(leaseSeconds, 'int')}),
              outcome_unknown_since = CASE WHEN paced.reclaim AND paced.held_until IS NOT NULL THEN coalesce(m.outcome_unknown_since, now()) ELSE m.outcome_unknown_since END,
              send_slot = coalesce((SELECT paced_until_after FROM num_moved) - paced.spacing, paced.slot_at, m.send_slot), updated_at = CASE WHEN paced.previous = ANY(${waiting}) THEN now() ELSE m.updated_at END
         FROM paced WHERE m.id = paced.locked_id AND paced.may_send
       RETURNING m.id, m.from_number, m.to_number, m.text, m.carrier, m.claim_token AS token, m.outcome_unknown_since AS unknown_since, paced.clk AS decided_at, paced.previous,
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
    // Each in its message's queue (a compliance reply's in the replies' own: dispatchJobsFromCte).
    const waking = stmt.with(
      'waking',
      `SELECT slotted_id AS message_id, wake_at AS run_at, (SELECT priority FROM paced) AS reply FROM ${slotted}
       UNION ALL SELECT locked_id, held_slot, priority FROM paced
        WHERE paced.new_slot IS NULL AND paced.held_slot > paced.clk AND NOT paced.may_send AND NOT paced.refused AND NOT paced.consent_changed
          AND (paced.previous = ANY(${waiting}) OR paced.reclaim)
       UNION ALL SELECT pulled_id, pulled_slot, pulled_reply FROM ${moved}`,
    );
    dispatchJobsFromCte(this.outbox, stmt, 'slotted_job', waking, `'-at-' || (extract(epoch FROM run_at) * 1000000)::bigint`);
    // A message another run holds the live lease of: a run at the lease's end (the database clock,
    // which the relay waits on too), one per lease however many twins find it, so a holder that
    // died is followed up even if its own job is spent.
    const leaseEnds = stmt.with(
      'lease_end',
      `SELECT locked_id AS message_id, held_until AS run_at, priority AS reply, holder FROM paced WHERE paced.previous = 'sending' AND NOT paced.reclaim`,
    );
    dispatchJobsFromCte(this.outbox, stmt, 'lease_end_job', leaseEnds, `'-' || holder`);
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
}
