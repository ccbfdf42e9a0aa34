import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { NormalizedEvent } from '../../carriers/normalized-event.js';
import type { BatchCarrierEventHandler, BatchConsumption, HandledKind } from './carrier-event-handlers.js';
import { callTurnLockSql, untriedEarlierEventSql } from './call-turns.js';

/** Which stored event (and, in a job's run, which job) a batch's k-th event is. */
export interface BatchEventIds {
  eventId: string;
  jobId?: string;
}

/**
 * What `consumed` is given to build a batch's consumption on: the CTE of the input rows, the CTE
 * of those ready now (the input itself when the handler has no readiness), and the handler's
 * note and not-ready reason as SQL over an input row's alias.
 */
export interface BatchConsumptionSql {
  input: string;
  ready: string;
  note: (row: string) => string;
  notReadyReason: (row: string) => string;
}

/**
 * Lets a batch handler add its CTEs to `stmt` for `events` (ids[k] names events[k]): its input
 * rows get `event_id` and `job_id` beside its own columns, and `consumed` adds the CTE of
 * consumed_event_id its writes select FROM (guarded consumptions and the jobs' claims of the
 * ready rows in a job's run, a gate in the general path's transaction).
 */
export async function buildBatchStatement(
  stmt: CteStatement,
  handler: BatchCarrierEventHandler<HandledKind>,
  events: NormalizedEvent[],
  ids: BatchEventIds[],
  consumed: (sql: BatchConsumptionSql) => string,
): Promise<void> {
  let input: string | undefined;
  let consumption: string | undefined;
  await handler(events as never, {
    stmt,
    input: (columns, rows) => {
      if (input) throw new Error('a batch handler adds its input once');
      if (rows.length !== ids.length) throw new Error(`a batch handler gave ${rows.length} input rows for ${ids.length} events`);
      const withIds = rows.map((row, k) => ({ ...row, event_id: ids[k].eventId, job_id: ids[k].jobId ?? null }));
      input = stmt.with('evt_input', `SELECT * FROM json_to_recordset(${stmt.param(JSON.stringify(withIds), 'json')}) AS i(event_id text, job_id text, ${columns})`);
      return input;
    },
    takeCallTurns: (sessionColumn) => {
      if (!input) throw new Error('a batch handler adds its input before it takes its calls\' turns');
      // Each distinct session's turn, only if it is free now: the statement never waits for one
      // call's turn while it holds other calls' (their events would wait behind it); a call whose
      // turn is taken (a run of its own in a transaction) leaves its event to the transaction path,
      // which waits for it. All taken before any row is read: the InitPlan below runs first.
      const locks = stmt.with(
        'evt_turn_locks',
        `SELECT s.session, ${callTurnLockSql('s.session', { wait: false })} AS taken
           FROM (SELECT DISTINCT i.${sessionColumn} AS session FROM ${input} i WHERE i.${sessionColumn} IS NOT NULL ORDER BY 1) s`,
        { materialized: true },
      );
      return stmt.with(
        'evt_turns',
        // e.id = ANY: the events by their key, whatever the planner makes of the recordset (a
        // prepared statement's generic plan would otherwise scan carrier_events).
        `SELECT i.event_id, e.created_at AS received_at FROM ${input} i JOIN carrier_events e ON e.id = i.event_id
          WHERE e.id = ANY (${stmt.param(ids.map((k) => k.eventId), 'text[]')}) AND (SELECT count(*) FROM ${locks}) >= 0
            AND EXISTS (SELECT FROM ${locks} t WHERE t.session = i.${sessionColumn} AND t.taken)
            AND NOT EXISTS (SELECT FROM carrier_events p WHERE ${untriedEarlierEventSql('p', `i.${sessionColumn}`, 'e.created_at', 'e.id')})`,
        { materialized: true },
      );
    },
    consume: ({ ready, notReadyReason = () => `'not ready'`, note = () => 'NULL' }: BatchConsumption = {}) => {
      if (!input) throw new Error('a batch handler adds its input before it consumes its events');
      if (consumption) throw new Error('a batch handler consumes its events once');
      // Readiness is decided once, in a CTE of its own: the claims, the consumptions and the
      // statement's answer (which runs go down the general path) all read the same rows.
      const readyRows = ready ? stmt.with('evt_ready', `SELECT i.event_id, i.job_id FROM ${input} i WHERE ${ready('i')}`) : input;
      consumption = consumed({ input, ready: readyRows, note, notReadyReason });
      return consumption;
    },
  });
  if (!consumption) throw new Error(`the batch handler of ${events[0]?.kind} did not consume its events`);
}
