import { Module } from '@nestjs/common';
import { PartitionMaintenance } from './partition-maintenance.js';
import { PartitionedTables } from './partitioned-tables.js';

/** Time-partitioned tables: modules register theirs; the relay's maintenance makes and drops partitions. */
@Module({
  providers: [PartitionedTables, PartitionMaintenance],
  exports: [PartitionedTables, PartitionMaintenance],
})
export class RetentionModule {}
