import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { GroupCommitter, type BatchOutcome } from '../../platform/database/group-commit.js';
import { retryingLockConflicts } from '../../platform/database/pg-errors.js';
import { Statements } from '../../platform/database/statements.js';
import { completeJobsSql } from '../../platform/outbox/job-sql.js';
import { createdAtOfId, createdAtOfIds } from '../../platform/retention/id-partition-key.js';

/**
 * What a command job's run writes once the carrier has answered: the job's completion (`jobId`),
 * and for a dial the carrier answered, its leg keeping the physical leg it created (`keep`), or
 * both. A job whose dial is kept completes only if the keep held.
 */
export interface CommandJobEnd {
  jobId?: string;
  keep?: { legId: string; callId: string; controlId: string };
}

/**
 * The leg of row `e` by its call's id too: call_legs is partitioned by its call's id time
 * (migration 0055). The span of all the ends' calls' times, computed once from the statement's
 * rows (uncorrelated subqueries), is what prunes the partitions when the plan starts; the row's
 * own window does not (a join's value, not known then).
 */
const END_CALL_IDS = `ARRAY(SELECT x.call_id FROM json_to_recordset($1::json) AS x(call_id text) WHERE x.call_id IS NOT NULL)`;
/**
 * The ends' legs by their ids as one array too: an index condition whatever the plan joins first.
 * Without it the generic plan (100 rows guessed for the JSON rows) hashed them and scanned a young
 * partition, computing every leg's call time on the way (1.6 ms at 56 legs in bench/calls.mjs: the
 * most costly statement of a call by total time, 2.5 ms a run).
 */
const END_LEG_IDS = `ARRAY(SELECT x.leg_id FROM json_to_recordset($1::json) AS x(leg_id text) WHERE x.leg_id IS NOT NULL)`;
const LEG_OF_END = `l.id = e.leg_id AND l.id = ANY (${END_LEG_IDS}) AND l.call_id = e.call_id AND ${createdAtOfId('e.call_id', 'onceline_id_time(l.call_id)')} AND ${createdAtOfIds(END_CALL_IDS, 'onceline_id_time(l.call_id)')}`;

/**
 * The keeps of every row of `ends` that keeps a leg, and the completion of every job of a row with
 * no keep or whose keep held, in one statement; returns each keep row (n) and whether it held. A
 * keep is claimLegControl's usual answer to a dial outside any transaction: the live leg takes (or
 * already has) the physical leg the dial created, the one outcome nothing follows from. Its WHERE
 * is its guard (the leg names no physical leg or this one, and is not over: evaluated on the leg
 * as it is once locked); a row it leaves alone changes nothing, and claimLegControl then decides in
 * a transaction with what follows (CallControlCommandsHandler.afterDial). A leg named twice in one
 * statement keeps the one it was set to, matched by control id. The completion decides nothing
 * (completeJobsSql). The ends come as JSON rows (a generic plan, as CallCommandSends' claims).
 *
 * `skipLocked` (a batch's statement): a leg another statement holds (its own event being decided)
 * is left out, with its job (`held` in the result; so is a leg not found), so one leg's lock never holds up the ends of
 * every job in the batch; each such end is then written alone by the statement without it, which
 * waits for its leg.
 */
function endSql(skipLocked: boolean): string {
  const locked = skipLocked
    ? `legs_locked AS MATERIALIZED (SELECT l.id FROM ends e JOIN call_legs l ON ${LEG_OF_END} ORDER BY l.id FOR NO KEY UPDATE OF l SKIP LOCKED),`
    : '';
  return `WITH ends AS MATERIALIZED (SELECT * FROM json_to_recordset($1::json) AS e(n int, job_id text, leg_id text, call_id text, control_id text)),
  ${locked}
  legs_kept AS (UPDATE call_legs l SET control_id = e.control_id FROM ends e${skipLocked ? ' JOIN legs_locked k ON k.id = e.leg_id' : ''}
                 WHERE ${LEG_OF_END} AND (l.control_id IS NULL OR l.control_id = e.control_id) AND l.ended_at IS NULL
                RETURNING l.id, l.control_id),
  kept AS MATERIALIZED (SELECT e.n FROM ends e JOIN legs_kept k ON k.id = e.leg_id AND k.control_id = e.control_id),
  jobs_done AS (${completeJobsSql(`ARRAY(SELECT e.job_id FROM ends e WHERE e.job_id IS NOT NULL AND (e.leg_id IS NULL OR e.n IN (SELECT n FROM kept)))`)})
SELECT n, n IN (SELECT n FROM kept) AS kept, ${skipLocked ? 'leg_id NOT IN (SELECT id FROM legs_locked)' : 'false'} AS held FROM ends WHERE leg_id IS NOT NULL`;
}
const BATCH_END_SQL = endSql(true);
const ONE_END_SQL = endSql(false);

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
  private readonly batches: GroupCommitter<CommandJobEnd, boolean | 'held'>;

  constructor(private readonly statements: Statements) {
    this.batches = new GroupCommitter((ends) => this.endAll(ends), BATCH);
  }

  /**
   * Writes `end`; true when its keep held (false without one). A leg another statement holds is
   * waited for by this end alone, after its batch: the batch's place is free by then.
   */
  async end(end: CommandJobEnd): Promise<boolean> {
    const outcome = await this.batches.submit(end);
    if (outcome !== 'held') return outcome;
    return (await this.write([end], ONE_END_SQL)).some((row) => row.kept);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.batches.drained();
  }

  private async endAll(ends: CommandJobEnd[]): Promise<BatchOutcome<boolean | 'held'>[]> {
    // In leg then job order, so two statements that share rows (twin runs) mostly lock them in one
    // order; a deadlock that happens anyway rolled the statement back whole and it runs again.
    const order = ends.map((_, i) => i).sort((a, b) => compare(ends[a].keep?.legId, ends[b].keep?.legId) || compare(ends[a].jobId, ends[b].jobId));
    const rows = await this.write(order.map((i) => ends[i]), BATCH_END_SQL);
    const outcomes: (boolean | 'held')[] = ends.map(() => false);
    for (const row of rows) outcomes[order[row.n - 1]] = row.kept ? true : row.held ? 'held' : false;
    return outcomes.map((value) => ({ ok: true, value }));
  }

  private write(ends: CommandJobEnd[], sql: string): Promise<{ n: number; kept: boolean; held: boolean }[]> {
    return retryingLockConflicts(() =>
      this.statements.query<{ n: number; kept: boolean; held: boolean }>(sql, [
        JSON.stringify(ends.map((end, i) => ({ n: i + 1, job_id: end.jobId ?? null, leg_id: end.keep?.legId ?? null, call_id: end.keep?.callId ?? null, control_id: end.keep?.controlId ?? null }))),
      ]),
    );
  }
}

function compare(a: string | undefined, b: string | undefined): number {
  return (a ?? '') < (b ?? '') ? -1 : (a ?? '') > (b ?? '') ? 1 : 0;
}
