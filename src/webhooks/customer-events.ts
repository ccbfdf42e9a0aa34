import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import type { CustomerEventType } from './event-types.js';

/**
 * The one way other modules tell customers something happened. Call it inside the transaction
 * of the state change the event describes (only when the guarded UPDATE changed a row): the
 * event, its deliveries and their jobs commit or roll back with that change.
 */
@Injectable()
export class CustomerEvents {
  /** Returns the event id (`evt_…`), which is also the `webhook-id` of every delivery attempt. */
  async emit(tx: Tx, accountId: string, type: CustomerEventType, data: object): Promise<string> {
    void tx; void accountId; void type; void data;
    throw new Error('CustomerEvents.emit: not implemented yet');
  }
}
