-- Issue 44: outbox_jobs becomes PARTITION BY RANGE (created_at), as carrier_events did in 0042
-- (the same steps; docs/retention.md). Retention drops a partition once its whole day is older
-- than OUTBOX_RETENTION_HOURS and none of its jobs is without an outcome (a message scheduled
-- weeks ahead keeps its day's partition that long), instead of deleting 5,000 rows per tick.
--
-- The old table becomes the partition outbox_jobs_legacy (its rows, indexes and the id sequence
-- as they were); the parent declares the relay's non-unique indexes (the old table has them,
-- identical, so ATTACH adopts them), and each partition has its own UNIQUE (id), UNIQUE (job_id)
-- (partitioned_tables.local_indexes). The old table's finished-rows index (the DELETE's) is no
-- longer needed by anything and goes with it. An empty old table (a new database) is dropped.

ALTER TABLE outbox_jobs RENAME TO outbox_jobs_legacy;
ALTER TABLE outbox_jobs_legacy RENAME CONSTRAINT outbox_jobs_pkey TO outbox_jobs_legacy_pkey;
ALTER TABLE outbox_jobs_legacy RENAME CONSTRAINT outbox_jobs_job_id_key TO outbox_jobs_legacy_job_id_key;
ALTER INDEX outbox_jobs_unrelayed_idx RENAME TO outbox_jobs_legacy_unrelayed_idx;
ALTER INDEX outbox_jobs_unfinished_idx RENAME TO outbox_jobs_legacy_unfinished_idx;
ALTER INDEX outbox_jobs_finished_idx RENAME TO outbox_jobs_legacy_finished_idx;

-- Same columns, NOT NULLs and defaults (id from the same sequence, now owned by the parent).
CREATE TABLE outbox_jobs (LIKE outbox_jobs_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (created_at);
ALTER SEQUENCE outbox_jobs_id_seq OWNED BY outbox_jobs.id;
CREATE INDEX outbox_jobs_unrelayed_idx ON outbox_jobs (run_at) WHERE relayed_at IS NULL;
CREATE INDEX outbox_jobs_unfinished_idx ON outbox_jobs (redrive_at) WHERE relayed_at IS NOT NULL AND completed_at IS NULL AND failed_at IS NULL;

SELECT onceline_partition_legacy('outbox_jobs');

-- "A job id already in the outbox is one job", across partitions (each partition's UNIQUE
-- (job_id) holds only within it): the stored job of this id, if any. Looked for first without a
-- lock: a committed job is final, and a duplicate of one (the common case: the same work enqueued
-- again) then takes no lock and waits on nothing, as ON CONFLICT (job_id) did not. Only when none
-- is found does it take the id's transaction-scoped advisory lock and look again, with a fresh
-- snapshot (VOLATILE, READ COMMITTED): a twin committed meanwhile is seen, one in flight holds the
-- lock (every insert of a job id runs this first). Rows the calling statement wrote are seen too.
CREATE FUNCTION outbox_job_twin(p_job_id text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin bigint;
BEGIN
  SELECT id INTO twin FROM outbox_jobs WHERE job_id = p_job_id LIMIT 1;
  IF twin IS NOT NULL THEN RETURN twin; END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('outbox-job:' || p_job_id, 0));
  SELECT id INTO twin FROM outbox_jobs WHERE job_id = p_job_id LIMIT 1;
  RETURN twin;
END $$;
