import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { GroupCommitter, type BatchOutcome } from '../../platform/database/group-commit.js';
import { Statements } from '../../platform/database/statements.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import { StatementJobs } from '../../platform/outbox/statement-jobs.js';
import { createdAtOfId } from '../../platform/retention/id-partition-key.js';
import type { CallCommand } from '../../carriers/call-control.js';

/**
 * A command as queued (CallControlCommands): the carrier's command plus the leg it is about (for
 * a dial, the leg row it creates; for the join of a winner, the winning leg), which decides
 * whether it is still wanted when it is sent (WANTED).
 */
export type QueuedCommand = CallCommand & { legId?: string };

/** A command we may (still) send: when its command_id first went out, and how often it has. */
export interface CommandSend {
  firstSentAt: Date;
  sends: number;
}

/**
 * When a command is still wanted, read in the statement that records its send (so a call that
 * ended, or a leg that lost, is never dialed, answered or bridged by a command queued before):
 *  - dial: its leg is not over and its call still rings;
 *  - join (the answer, bridge or transcription naming `legId`): that leg is still the call's live
 *    winner, and the call has not ended;
 *  - call (the voicemail's answer and recording): the call has not ended;
 *  - always (a hangup).
 * Each over one row `w` of the claims (command_id, call_id, leg_id).
 */
// The leg by its call's id too: call_legs is partitioned by its call's id time (migration 0055).
const LEG_OF_CALL = `l.call_id = w.call_id AND ${createdAtOfId('w.call_id', 'onceline_id_time(l.call_id)')}`;
const WANTED = {
  dial: `EXISTS (SELECT FROM call_legs l JOIN calls c ON c.id = l.call_id WHERE l.id = w.leg_id AND ${LEG_OF_CALL} AND l.ended_at IS NULL AND c.ended_at IS NULL AND c.status = 'ringing')`,
  join: `EXISTS (SELECT FROM calls c JOIN call_legs l ON l.id = c.answered_leg WHERE c.id = w.call_id AND l.id = w.leg_id AND ${LEG_OF_CALL} AND l.ended_at IS NULL AND c.ended_at IS NULL)`,
  call: `EXISTS (SELECT FROM calls c WHERE c.id = w.call_id AND c.ended_at IS NULL)`,
} as const;
type Wanted = keyof typeof WANTED | 'always';

function wantedWhen(callId: string | null, command: QueuedCommand): Wanted {
  if (!callId || command.action === 'hangup') return 'always';
  if (command.action === 'dial') return 'dial';
  return command.legId ? 'join' : 'call';
}

/**
 * The claims of one statement, each row's guard its own (WANTED by `wanted`), in command_id order:
 * call_command_send takes each command id's advisory lock in the order it runs, so two statements
 * that share command ids (twin runs) take them in one order and never wait on each other crosswise.
 * The function runs only for the rows the guarded subquery yields (OFFSET 0 keeps the planner from
 * moving it above the guard). The claims come as JSON rows, not arrays: the planner cannot size a
 * JSON recordset from its value, so after its first runs the prepared statement keeps one generic
 * plan, where unnest of the arrays had every run planned anew for its arrays' length (custom plans,
 * ~1.4 ms each over the partitions its guards probe: more than the statement's execution).
 */
const CLAIMS_SQL = `SELECT w.n, s.first_sent_at, s.sends
  FROM (SELECT w.n, w.command_id, w.call_id
          FROM json_to_recordset($1::json) AS w(n int, command_id text, call_id text, leg_id text, wanted text)
         WHERE CASE w.wanted ${Object.entries(WANTED).map(([when, sql]) => `WHEN '${when}' THEN ${sql}`).join(' ')} ELSE true END
         ORDER BY w.command_id, w.n OFFSET 0) w
  CROSS JOIN LATERAL call_command_send(w.command_id, w.call_id) s`;

interface Claim {
  callId: string | null;
  command: QueuedCommand;
}

/**
 * A job's first send as recordFirstSendsIn recorded it (JobContext.prefetched of the run right
 * after its statement), or undefined: none recorded, the run claims it.
 */
export function firstSendOf(prefetched: unknown): CommandSend | undefined {
  const firstSend = (prefetched as { firstSend?: { firstSentAt: string; sends: number } } | null | undefined)?.firstSend;
  return firstSend ? { firstSentAt: new Date(firstSend.firstSentAt), sends: firstSend.sends } : undefined;
}

/** Most claims one statement takes, and claim statements in flight at once (each holds a pooled connection). */
const BATCH = { maxBatch: 128, maxInFlight: 2 };

/**
 * The record of every call-control command sent (call_command_sends), one row per command_id.
 * The claims that come in while a claim statement runs (the commands of many calls decided by one
 * set statement and sent right after its commit) go in the next one: N claims cost one statement
 * (group commit, as ingest does), each still decided by its own guard in it.
 */
@Injectable()
export class CallCommandSends implements BeforeApplicationShutdown {
  private readonly batches: GroupCommitter<Claim, CommandSend | undefined>;

  constructor(private readonly statements: Statements) {
    this.batches = new GroupCommitter((claims) => this.claimAll(claims), BATCH);
  }

  /**
   * Records one more send of `command`, or returns undefined (and records nothing) when the call
   * no longer wants it. One statement (shared with the claims made meanwhile): the guard is its
   * subquery's WHERE, and the row it inserts or bumps says when the command_id first went out,
   * which bounds every resend by the carrier's command_id window however often the job runs or
   * its process restarts.
   */
  claim(callId: string | null, command: QueuedCommand): Promise<CommandSend | undefined> {
    return this.batches.submit({ callId, command });
  }

  /**
   * The first command of each new job `queued` that this process sends right after `stmt` commits
   * (a dial, the answer of a join, a hangup): its send recorded by the statement that decided it
   * (call_command_send, as claim records it), handed to the run as its prefetched first send
   * (firstSendOf), so the command goes out without a claim statement and its commit of its own. The
   * claim's guard (the call still wants the command) holds by construction here: the statement
   * decided it under its call's lock. The record says the command may have gone out: a run that
   * dies after the commit leaves the relay's run a resend under the same command id, inside the
   * carrier's window counted from here (earlier than the real send: the safe side). The job's
   * later commands are claimed one by one before they go, each under its guard, as before.
   */
  recordFirstSendsIn(stmt: CteStatement, queued: string): void {
    const jobs = StatementJobs.of(stmt);
    if (!jobs.afterCommitPayloadCtes.has(queued)) return;
    jobs.afterCommitPrefetchCtes.push(
      stmt.with(
        'call_commands_first_sends',
        `SELECT q.job_id, jsonb_build_object('firstSend', jsonb_build_object('firstSentAt', s.first_sent_at, 'sends', s.sends)) AS prefetched
           FROM ${queued} q CROSS JOIN LATERAL call_command_send(q.data->'commands'->0->>'commandId', q.data->>'callId') s`,
        { materialized: true },
      ),
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.batches.drained();
  }

  private async claimAll(claims: Claim[]): Promise<BatchOutcome<CommandSend | undefined>[]> {
    const wanted = claims.map(({ callId, command }) => wantedWhen(callId, command));
    // call_command_send: the row bumped or made under the command id's lock (migration 0055:
    // ON CONFLICT (command_id) cannot be named on the partitioned table).
    const rows = await this.statements.query<{ n: number; first_sent_at: Date; sends: number }>(CLAIMS_SQL, [
      JSON.stringify(claims.map((c, i) => ({
        n: i + 1,
        command_id: c.command.commandId,
        call_id: c.callId,
        leg_id: wanted[i] === 'dial' || wanted[i] === 'join' ? (c.command.legId ?? null) : null,
        wanted: wanted[i],
      }))),
    ]);
    const sends = new Map(rows.map((row) => [row.n, { firstSentAt: row.first_sent_at, sends: row.sends }]));
    return claims.map((_, i) => ({ ok: true, value: sends.get(i + 1) }));
  }
}
