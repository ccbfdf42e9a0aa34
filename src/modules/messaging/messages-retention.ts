import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { PartitionedTables } from '../../platform/retention/partitioned-tables.js';

/** A message not settled yet: still to be sent, being sent, or sent with an outcome not known. */
export const UNSETTLED_MESSAGE = `status IN ('queued', 'scheduled', 'sending') OR outcome_unknown_since IS NOT NULL`;

/**
 * messages and message_status_history are partitioned by the message id's time (migration 0046),
 * a message and its history in partitions of the same day, both kept MESSAGES_RETENTION_HOURS
 * (docs/contract.md, *Retention of messages and customer events*). A partition holding a message
 * not settled yet (queued, scheduled weeks ahead, sending, of unknown outcome) is kept however
 * old, and so is the history partition of the same day: a message's history goes with it.
 */
@Injectable()
export class MessagesRetention implements OnModuleInit {
  constructor(
    private readonly tables: PartitionedTables,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const retentionHours = this.config.MESSAGES_RETENTION_HOURS;
    this.tables.register({ table: 'messages', unfinished: UNSETTLED_MESSAGE, retentionHours });
    // Each partition's partial index of its unsettled messages answers the subquery.
    this.tables.register({ table: 'message_status_history', unfinished: `message_id IN (SELECT id FROM messages WHERE ${UNSETTLED_MESSAGE})`, retentionHours });
  }
}
