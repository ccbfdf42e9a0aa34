import { Injectable } from '@nestjs/common';
import { IdPrefix } from '../../platform/ids.js';
import { CteStatement } from '../../platform/database/cte-statement.js';
import { assertInTransaction, exec, type Tx } from '../../platform/database/tx.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import { CUSTOMER_EVENT_VERSION, isCustomerEventType, type CustomerEventType } from './event-types.js';
import { newJobsCount } from '../../platform/outbox/statement-jobs.js';

/**
 * The one way other modules tell customers something happened. Call it inside the transaction
 * (or the statement) of the state change the event describes, and only when the guarded UPDATE
 * changed a row: the event, its deliveries and their jobs then commit or roll back with that
 * change, and a replayed handler (whose guard changes nothing) emits nothing.
 */
@Injectable()
export class CustomerEvents {
  constructor(
    private readonly deliveries: DeliveryScheduler,
    private readonly outbox: OutboxService,
  ) {}

  /**
   * Returns the event id (`evt_…`), which is also the `webhook-id` of every delivery attempt.
   * One statement: the event, a delivery per subscribed endpoint and their first jobs.
   * `readInSql`: fields of the payload the statement reads itself (keys of `data` it replaces),
   * each an SQL jsonb expression built on `stmt` (a row's related rows, say): the event's
   * contents come from the same round trip that writes it.
   */
  async emit(tx: Tx, accountId: string, type: CustomerEventType, data: object, readInSql?: (stmt: CteStatement) => Record<string, string>): Promise<string> {
    assertInTransaction(tx);
    const stmt = new CteStatement();
    const fields = Object.entries(readInSql?.(stmt) ?? {});
    const read = fields.length === 0 ? '' : ` || jsonb_build_object(${fields.map(([key, sql]) => `${stmt.param(key, 'text')}, ${sql}`).join(', ')})`;
    stmt.with('evt_source', `SELECT ${stmt.param(accountId)}::text AS account_id, ${stmt.param(JSON.stringify(data))}::jsonb${read} AS payload`);
    const event = this.emitFromCte(stmt, 'evt_source', type, 'payload');
    const { rows } = await exec<{ id: string; jobs: number }>(tx, stmt.text(`SELECT (SELECT id FROM ${event}) AS id, (${newJobsCount(stmt)})::int AS jobs`), stmt.params);
    this.outbox.jobsWritten(rows[0].jobs, tx);
    return rows[0].id;
  }

  /**
   * emit as a fragment of a statement: an event of `type` for each row of CTE `source` (which
   * has `account_id`), its payload the SQL expression `payload` over source's columns. Put it
   * after the guard's CTE, reading from it, so it emits only for rows the guard changed. The
   * statement's runner calls OutboxService.jobsWritten with newJobsCount(stmt). Returns the
   * CTE of the events (id, account_id, type, payload, created_at).
   *
   * `type` may instead list the types of a source whose own `type` column names each row's
   * (one statement announcing several kinds of change; a statement emits once).
   */
  emitFromCte(stmt: CteStatement, source: string, type: CustomerEventType | readonly CustomerEventType[], payload: string): string {
    const types = typeof type === 'string' ? [type] : type;
    for (const t of types) if (!isCustomerEventType(t)) throw new Error(`unknown customer event type ${JSON.stringify(t)}`);
    const typeSql = typeof type === 'string' ? stmt.param(type, 'text') : `type::text`;
    const events = stmt.with(
      'evt_emitted',
      `INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT onceline_id('${IdPrefix.Event}'), account_id, ${typeSql}, ${stmt.param(CUSTOMER_EVENT_VERSION, 'int')}, ${payload} FROM ${source}
       RETURNING id, account_id, type, payload, created_at`,
    );
    this.deliveries.createForEventsCte(stmt, events, typeof type === 'string' ? type : null);
    return events;
  }
}
