import { Injectable } from '@nestjs/common';
import { exec, type Tx } from '../../platform/database/tx.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import type { FailureReason } from '../../carriers/normalized-event.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { dispatchJobsFromCte } from './dispatch-jobs.js';
import { HELD } from '../numbers/phone-numbers.service.js';
import { MessageEffects, type MessageRow } from './message-effects.js';
import type { SettledBy } from '../billing/usage-cause.dto.js';
import { OptOutKeywords, optedOutSql } from './opt-out-keywords.js';
import { MESSAGE_COLUMNS } from './message-view.js';
import { newJobsCount } from '../../platform/outbox/statement-jobs.js';
import { CLAIM_TOO_OLD, OUTCOME_UNKNOWN, SendResolution } from './message-history-details.js';
import { carrierOptOutFailure, recordHistory, REFUSED_OPTED_OUT } from './message-moves.js';
import type { DispatchLease } from './dispatch-claims.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';

/** How many times a message whose sends the carrier never shows is sent again before it fails. */
export const MAX_RESENDS_AFTER_NOTHING_FOUND = 3;

/** What a resolver's run does when the carrier showed nothing (continueResolving). */
export type ResolveStep = 'resend' | 'wait' | 'failed' | 'refused' | 'gone';

/**
 * What becomes of a claimed send: the carrier's answer (markSent, markRejected), a 429
 * (requeueThrottled), a lease given back (releaseClaim), and a send whose answer was lost, kept
 * unknown (markOutcomeUnknown) until a lookup, a receipt or the window decides (continueResolving).
 * Each is one statement guarded by the run's lease token (or the outcome still unknown), so a run
 * that lost its lease, or a second run after a crash, records nothing new.
 */
@Injectable()
export class SendOutcomes {
  constructor(
    private readonly effects: MessageEffects,
    private readonly keywords: OptOutKeywords,
    private readonly outbox: OutboxService,
  ) {}

  /**
   * The carrier answered 429 (too fast) to a run holding the lease: the message goes back to
   * `queued` (history, no event, no charge), its number pauses for the carrier's Retry-After (no
   * slot starts before then, and slots already given inside the pause are taken again), and a
   * dispatch job is due at the pause's end. Under this run's token only: nothing is sent twice,
   * nothing lost. Returns when the message will be tried again, or undefined when the lease was
   * no longer this run's.
   */
  requeueThrottled(tx: Tx, lease: DispatchLease, retryAfterSeconds: number): Promise<Date | undefined> {
    return this.requeue(tx, lease, 'retry', retryAfterSeconds);
  }

  /**
   * A claim this run held too long to send (claimTooOld: the process stalled after the claim was
   * decided) goes back to `queued` unsent, its history saying why, with a dispatch job due at once:
   * taken again, it is paced like any send. Under this run's token only; undefined when the lease
   * was no longer this run's.
   */
  requeueStale(tx: Tx, lease: DispatchLease): Promise<Date | undefined> {
    return this.requeue(tx, lease, 'stale', undefined, CLAIM_TOO_OLD);
  }

  /** sending → queued under this run's token, with a job due at the number's pause (`pauseSeconds`: one starts now) or at once. */
  private async requeue(tx: Tx, lease: DispatchLease, jobTag: string, pauseSeconds?: number, detail?: string): Promise<Date | undefined> {
    const stmt = new CteStatement();
    const pause = `clock_timestamp() + make_interval(secs => ${stmt.param(pauseSeconds ?? 0, 'float8')})`;
    // sending under this run's token: a lease another run has taken since is left alone.
    const back = stmt.with(
      'requeued',
      `UPDATE messages SET status = 'queued', claimed_until = NULL, send_slot = NULL, updated_at = now()
        WHERE id = ${stmt.param(lease.id, 'text')} AND status = 'sending' AND claim_token = ${stmt.param(lease.token, 'text')}
       RETURNING id AS throttled_id, account_id AS throttled_account, from_number AS throttled_from, auto_reply IS NOT NULL AS throttled_reply`,
    );
    stmt.with(
      'paused',
      `UPDATE phone_numbers p SET send_paused_until = greatest(p.send_paused_until, ${pause}) FROM ${back} t
        WHERE ${stmt.param(pauseSeconds !== undefined, 'boolean')} AND p.phone_number = t.throttled_from AND p.account_id = t.throttled_account AND p.${HELD}
       RETURNING p.send_paused_until`,
    );
    stmt.with('requeued_history', `INSERT INTO message_status_history (message_id, status, detail) SELECT throttled_id, 'queued', ${stmt.param(detail ?? null, 'text')} FROM ${back}`);
    const resume = stmt.with(
      'resume',
      `SELECT throttled_id AS message_id, throttled_reply AS reply, coalesce((SELECT send_paused_until FROM paused), ${pause}) AS run_at FROM ${back}`,
    );
    dispatchJobsFromCte(this.outbox, stmt, 'resume_job', resume, `'-${jobTag}-' || ${stmt.param(lease.token, 'text')}`);
    const { rows } = await exec<{ resume_at: Date | null; jobs: number }>(tx, stmt.text(`SELECT (SELECT run_at FROM ${resume}) AS resume_at, (${newJobsCount(stmt)})::int AS jobs`), stmt.params);
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return rows[0].resume_at ?? undefined;
  }

  /** A run that stopped calling the carrier without an answer gives its lease back, so a retry can claim at once. */
  async releaseClaim(tx: Tx, lease: DispatchLease): Promise<void> {
    // claim_token = this run's: a lease another run has taken since is left alone.
    await exec(tx, `UPDATE messages SET claimed_until = NULL WHERE id = $1 AND ${idKeyOf('$1')} AND status = 'sending' AND claim_token = $2`, [lease.id, lease.token]);
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
           FROM messages m WHERE m.id = $1 AND ${idKeyOf('$1', 'm.id')} AND m.status = 'sending' AND (m.claim_token = $3 OR m.outcome_unknown_since IS NOT NULL) FOR UPDATE OF m)
       UPDATE messages SET status = 'sent', carrier_message_id = found.pick, claimed_until = NULL, outcome_unknown_since = NULL, updated_at = now()
         FROM found WHERE id = found.found_id AND found.pick IS NOT NULL
       RETURNING ${MESSAGE_COLUMNS}, found.was_unknown`,
      [lease.id, ids, lease.token],
    );
    if (rows.length === 0) return false;
    const { was_unknown: wasUnknown, ...message } = rows[0];
    const detail = resolution ?? (wasUnknown ? SendResolution.answeredLate : undefined);
    await recordHistory(tx, lease.id, 'sent', detail);
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
       RETURNING id AS message_id, claimed_until AS run_at, auto_reply IS NOT NULL AS reply`,
    );
    stmt.with('unknown_history', `INSERT INTO message_status_history (message_id, status, detail) SELECT message_id, 'sending', ${stmt.param(`${OUTCOME_UNKNOWN}: ${reason}`, 'text')} FROM ${unknown}`);
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
    await exec(tx, `SELECT FROM messages WHERE id = $1 AND ${idKeyOf('$1')} FOR UPDATE`, [lease.id]);
    await exec(
      tx,
      `SELECT FROM phone_numbers p JOIN messages m ON p.phone_number = m.from_number AND p.account_id = m.account_id AND p.${HELD} WHERE m.id = $1 AND ${idKeyOf('$1', 'm.id')} FOR UPDATE OF p`,
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
         FROM rsv_found f WHERE m.id = f.found_id AND f.step = 'wait' RETURNING m.id AS message_id, m.claimed_until AS run_at, m.auto_reply IS NOT NULL AS reply`,
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

  /** The dispatch job that takes a waiting resolution over at its check (CTE `waiting`: message_id, run_at, reply), one per lease. */
  private checkJobCte(stmt: CteStatement, waiting: string, lease: DispatchLease): void {
    dispatchJobsFromCte(this.outbox, stmt, 'check_job', waiting, `'-check-' || ${stmt.param(lease.token, 'text')}`);
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
}
