import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { NormalizedEvent } from '../../carriers/normalized-event.js';
import type { BatchCarrierEventHandler, EventConsumption, HandledKind, OneStatementCarrierEventHandler } from './carrier-event-handlers.js';

/**
 * Lets a one-statement handler add its CTEs to `stmt`; `consumed` adds the CTE its writes select
 * FROM (the guarded consumption in a job's one-statement run, a gate in the general path's
 * transaction). Returns how the handler asked to be consumed.
 */
export function buildOneStatement(
  stmt: CteStatement,
  handler: OneStatementCarrierEventHandler<HandledKind>,
  event: NormalizedEvent,
  consumed: (given: EventConsumption) => string,
): EventConsumption {
  let consumption: EventConsumption | undefined;
  handler(event as never, {
    stmt,
    consume: (given = {}) => {
      if (consumption) throw new Error('a one-statement handler consumes its event once');
      consumption = given;
      return consumed(given);
    },
  });
  if (!consumption) throw new Error(`the one-statement handler of ${event.kind} did not consume its event`);
  return consumption;
}

/** Which stored event (and, in a job's run, which job) a batch's k-th event is. */
export interface BatchEventIds {
  eventId: string;
  jobId?: string;
}

/**
 * Lets a batch handler add its CTEs to `stmt` for `events` (ids[k] names events[k]): its input
 * rows get `event_id` and `job_id` beside its own columns, and `consumed(input, note)` adds the
 * CTE of consumed_event_id its writes select FROM (guarded consumptions and the jobs' claims in a
 * job's run, a gate in the general path's transaction).
 */
export function buildBatchStatement(
  stmt: CteStatement,
  handler: BatchCarrierEventHandler<HandledKind>,
  events: NormalizedEvent[],
  ids: BatchEventIds[],
  consumed: (input: string, note: (row: string) => string) => string,
): void {
  let input: string | undefined;
  let consumption: string | undefined;
  handler(events as never, {
    stmt,
    input: (columns, rows) => {
      if (input) throw new Error('a batch handler adds its input once');
      if (rows.length !== ids.length) throw new Error(`a batch handler gave ${rows.length} input rows for ${ids.length} events`);
      const withIds = rows.map((row, k) => ({ ...row, event_id: ids[k].eventId, job_id: ids[k].jobId ?? null }));
      input = stmt.with('evt_input', `SELECT * FROM json_to_recordset(${stmt.param(JSON.stringify(withIds), 'json')}) AS i(event_id text, job_id text, ${columns})`);
      return input;
    },
    consume: (note = () => 'NULL') => {
      if (!input) throw new Error('a batch handler adds its input before it consumes its events');
      if (consumption) throw new Error('a batch handler consumes its events once');
      consumption = consumed(input, note);
      return consumption;
    },
  });
  if (!consumption) throw new Error(`the batch handler of ${events[0]?.kind} did not consume its events`);
}
