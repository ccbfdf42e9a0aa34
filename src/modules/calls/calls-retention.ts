import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { PartitionedTables } from '../../platform/retention/partitioned-tables.js';

/**
 * A call not ended yet, begun before the partition's end (NULL: unbounded) and, `fromStart`, not
 * before its start. Through calls' partial index of live calls (migration 0053).
 */
const liveCallBegun = (fromStart: boolean) =>
  `EXISTS (SELECT FROM calls c WHERE c.ended_at IS NULL${fromStart ? ` AND c.created_at >= coalesce(p.from_at, '-infinity')` : ''} AND c.created_at < coalesce(p.to_at, 'infinity'))`;

/**
 * The call history is partitioned by the call's time (migrations 0053-0055), CALLS_PARTITION_PERIOD_SECONDS
 * a partition, and kept CALLS_RETENTION_HOURS. A call and its history age out together: calls by
 * created_at (its id's time), legs, timeline and transcript fragments by onceline_id_time(call_id),
 * the same periods, so their partitions of a period are dropped on the same run. Unfinished work:
 * a call not ended (ended_at IS NULL) keeps its partition, and its history's partitions of the same
 * period, however old; call_command_sends (by first_sent_at: sends happen while a call lives) is
 * kept while any call begun before its period's end is still live, since a command may still be
 * re-sent and its first send's time bounds every resend.
 */
@Injectable()
export class CallsRetention implements OnModuleInit {
  constructor(
    private readonly tables: PartitionedTables,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const common = { retentionHours: this.config.CALLS_RETENTION_HOURS, periodSeconds: this.config.CALLS_PARTITION_PERIOD_SECONDS, heldUntil: 'no call begun in its period is live' };
    this.tables.register({ table: 'calls', unfinished: 'ended_at IS NULL', ...common });
    for (const table of ['call_legs', 'call_timeline', 'call_transcript_fragments']) {
      this.tables.register({ table, unfinished: 'false', releasable: `NOT ${liveCallBegun(true)}`, ...common });
    }
    this.tables.register({ table: 'call_command_sends', unfinished: 'false', releasable: `NOT ${liveCallBegun(false)}`, ...common });
  }
}
