import { Injectable } from '@nestjs/common';
import { IdPrefix, newId } from '../../platform/ids.js';
import { assertInTransaction, exec, type Tx } from '../../platform/database/tx.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import { CUSTOMER_EVENT_VERSION, isCustomerEventType, type CustomerEventType } from './event-types.js';

/**
 * The one way other modules tell customers something happened. Call it inside the transaction
 * of the state change the event describes, and only when the guarded UPDATE changed a row: the
 * event, its deliveries and their jobs then commit or roll back with that change, and a replayed
 * handler (whose guard changes nothing) emits nothing.
 */
@Injectable()
export class CustomerEvents {
  constructor(private readonly deliveries: DeliveryScheduler) {}

  /** Returns the event id (`evt_…`), which is also the `webhook-id` of every delivery attempt. */
  async emit(tx: Tx, accountId: string, type: CustomerEventType, data: object): Promise<string> {
    assertInTransaction(tx);
    if (!isCustomerEventType(type)) throw new Error(`unknown customer event type ${JSON.stringify(type)}`);
    const id = newId(IdPrefix.Event);
    await exec(
      tx,
      `INSERT INTO outbound_events (id, account_id, type, event_version, payload) VALUES ($1, $2, $3, $4, $5)`,
      [id, accountId, type, CUSTOMER_EVENT_VERSION, JSON.stringify(data)],
    );
    await this.deliveries.createForEvent(tx, id, accountId, type);
    return id;
  }
}
