import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { GroupCommitter, type BatchOutcome } from '../../platform/database/group-commit.js';
import { retryingLockConflicts } from '../../platform/database/pg-errors.js';
import { Statements } from '../../platform/database/statements.js';
import { completeJobsSql } from '../../platform/outbox/job-sql.js';

/**
 * What a command job's run writes once the carrier has answered: the job's completion (`jobId`),
 * and for a dial the carrier answered, its leg keeping the physical leg it created (`keep`), or
 * both. A job whose dial is kept completes only if the keep held.
 */
export interface CommandJobEnd {
  jobId?: string;
  keep?: { legId: string; controlId: string };
}

/**
 * The keeps of every row of `ends` that keeps a leg, and the completion of every job of a row with
 * no keep or whose keep held, in one statement; returns the rows (n) whose keep held. A keep is
 * claimLegControl's usual answer to a dial outside any transaction: the live leg takes (or already
 * has) the physical leg the dial created, the one outcome nothing follows from. Its WHERE is its
 * guard (the leg names no physical leg or this one, and is not over: re-read after a row-lock
 * wait); a row it leaves alone changes nothing, and claimLegControl then decides in a transaction
 * with what follows (CallControlCommandsHandler.afterDial). A leg named twice in one statement keeps
 * the one it was set to, matched by control id. The completion decides nothing (completeJobsSql).
 */
const END_SQL = `WITH ends AS MATERIALIZED (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS e(job_id, leg_id, control_id, n)),
  legs_kept AS (UPDATE call_legs l SET control_id = e.control_id FROM ends e
                 WHERE l.id = e.leg_id AND (l.control_id IS NULL OR l.control_id = e.control_id) AND l.ended_at IS NULL
                RETURNING l.id, l.control_id),
  kept AS MATERIALIZED (SELECT e.n FROM ends e JOIN legs_kept k ON k.id = e.leg_id AND k.control_id = e.control_id),
  jobs_done AS (${completeJobsSql(`ARRAY(SELECT e.job_id FROM ends e WHERE e.job_id IS NOT NULL AND (e.leg_id IS NULL OR e.n IN (SELECT n FROM kept)))`)})
SELECT n FROM kept`;

/** Most ends one statement takes, and statements in flight at once (each holds a pooled connection). */
const BATCH = { maxBatch: 128, maxInFlight: 2 };

/**
 * The end of call-command jobs' runs, together: the ends that come in while one statement runs go
 * in the next (group commit, as ingest does), so the completions and dial answers of N jobs cost
 * one statement, each keep still guarded by its own WHERE. A caller's promise settles once the
 * statement that holds its end has committed: a job is completed only after everything its run
 * sent and decided, and a run that dies before has its row taken by the relay (its commands then
 * resent under their command ids).
 */
@Injectable()
export class CallCommandCompletions implements BeforeApplicationShutdown {
  private readonly batches: GroupCommitter<CommandJobEnd, boolean>;

  constructor(private readonly statements: Statements) {
    this.batches = new GroupCommitter((ends) => this.endAll(ends), BATCH);
  }

  /** Writes `end`; true when its keep held (false without one). */
  end(end: CommandJobEnd): Promise<boolean> {
    return this.batches.submit(end);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.batches.drained();
  }

  private async endAll(ends: CommandJobEnd[]): Promise<BatchOutcome<boolean>[]> {
    // In leg then job order, so two statements that share rows (twin runs) mostly lock them in one
    // order; a deadlock that happens anyway rolled the statement back whole and it runs again.
    const order = ends.map((_, i) => i).sort((a, b) => compare(ends[a].keep?.legId, ends[b].keep?.legId) || compare(ends[a].jobId, ends[b].jobId));
    const rows = await retryingLockConflicts(() =>
      this.statements.query<{ n: string }>(END_SQL, [
        order.map((i) => ends[i].jobId ?? null),
        order.map((i) => ends[i].keep?.legId ?? null),
        order.map((i) => ends[i].keep?.controlId ?? null),
      ]),
    );
    const kept = new Set(rows.map((row) => order[Number(row.n) - 1]));
    return ends.map((_, i) => ({ ok: true, value: kept.has(i) }));
  }
}

function compare(a: string | undefined, b: string | undefined): number {
  return (a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0;
}
