/** One partition of a time-partitioned table as the catalog shows it. */
export interface PartitionInfo {
  name: string;
  /** Its range [from, to); from is null for the partition that holds everything before (`FROM (MINVALUE)`). */
  from: Date | null;
  to: Date;
  /** Heap, indexes and TOAST. */
  bytes: number;
  /** pg_class.reltuples: null until the table was first vacuumed or analyzed. */
  rowsEstimate: number | null;
  /** A DETACH ... CONCURRENTLY that did not finish (the process died): maintenance finalizes it. */
  detachPending: boolean;
}

export interface PartitionSettings {
  periodSeconds: number;
  ahead: number;
  retentionHours: number;
}

/** What the next maintenance run will do to one table: partitions to make, and those past retention. */
export interface PartitionPlan {
  create: { from: Date; to: Date }[];
  /** Past retention: each is dropped unless it still holds unfinished work (checked when it runs). */
  expired: PartitionInfo[];
}

/** Most partitions one run makes (a relay down for long, or a much shorter period): the next run makes more. */
const MOST_CREATED_PER_RUN = 500;

/**
 * Partitions to make: from the end of the last one, a period at a time, until one covers `now`
 * plus `ahead` periods. Period starts are aligned on the epoch (a day's start at 00:00 UTC), the
 * first after the last partition's end when that end is not aligned (a period changed).
 */
export function partitionPlan(partitions: PartitionInfo[], now: Date, settings: PartitionSettings): PartitionPlan {
  const period = settings.periodSeconds * 1000;
  const horizon = (Math.floor(now.getTime() / period) + settings.ahead + 1) * period;
  const create: { from: Date; to: Date }[] = [];
  let end = partitions.length === 0 ? Math.floor(now.getTime() / period) * period : Math.max(...partitions.map((p) => p.to.getTime()));
  while (end < horizon && create.length < MOST_CREATED_PER_RUN) {
    const next = (Math.floor(end / period) + 1) * period;
    create.push({ from: new Date(end), to: new Date(next) });
    end = next;
  }
  const cutoff = now.getTime() - settings.retentionHours * 3_600_000;
  // The newest partition is never expired: inserts need somewhere to go.
  const newest = Math.max(...partitions.map((p) => p.to.getTime()));
  const expired = partitions.filter((p) => p.to.getTime() <= cutoff && p.to.getTime() < newest);
  return { create, expired };
}
