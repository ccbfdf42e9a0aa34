import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { NormalizedEvent } from '../../carriers/normalized-event.js';
import type { EventConsumption, HandledKind, OneStatementCarrierEventHandler } from './carrier-event-handlers.js';

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
