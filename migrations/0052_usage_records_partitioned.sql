-- Issue 44 phase 2, usage_records step 3 of 3: the billing ledger becomes PARTITION BY RANGE
-- (created_at), as carrier_events did in 0042 (the same steps and locks; docs/retention.md).
-- created_at stays what it was (now() of the recording transaction: the billing period a row
-- belongs to). Retention drops a partition only after an export covering its whole period whose
-- row count still matches (usage_partition_exported, below), never on age alone.
--
-- The old table becomes the partition usage_records_legacy (its rows, indexes, CHECKs and foreign
-- key as they were: no scan, no index build); the parent declares the CHECKs (new partitions copy
-- them, 0050), the foreign key to accounts (ATTACH adopts the old table's, the same one, without
-- validating it again) and the non-unique (account_id, created_at) index (adopted too). Each
-- partition has its own UNIQUE (id), UNIQUE (kind, resource_id) (partitioned_tables.local_indexes).

ALTER TABLE usage_records RENAME TO usage_records_legacy;
ALTER TABLE usage_records_legacy RENAME CONSTRAINT usage_records_pkey TO usage_records_legacy_pkey;
ALTER TABLE usage_records_legacy RENAME CONSTRAINT usage_records_kind_resource_id_key TO usage_records_legacy_key;
ALTER INDEX usage_records_account_idx RENAME TO usage_records_legacy_account_idx;

CREATE TABLE usage_records (LIKE usage_records_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (created_at);
-- The bound is the old table's alone (copied by INCLUDING CONSTRAINTS).
ALTER TABLE usage_records DROP CONSTRAINT usage_records_legacy_bound;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id);
CREATE INDEX usage_records_account_idx ON usage_records (account_id, created_at);

SELECT onceline_partition_legacy('usage_records');

-- "A resource is billed once per kind", across partitions (each partition's UNIQUE (kind,
-- resource_id) holds only within it): the stored row of this key, if any. As outbox_job_twin
-- (0043): looked for first without a lock (a committed usage row is final: the ledger is never
-- updated), and only when none is found under the key's transaction-scoped advisory lock, with a
-- fresh snapshot (VOLATILE, READ COMMITTED): a twin committed meanwhile is seen, one in flight
-- holds the lock (UsageLedger.recordFromCte, the only writer, calls this as its INSERT's WHERE).
-- Rows the calling statement wrote are seen too. Lock order: the writer holds its resource's row
-- lock (message, call, number) before this lock, never the other way round.
CREATE FUNCTION usage_record_twin(p_kind text, p_resource_id text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin text;
BEGIN
  SELECT id INTO twin FROM usage_records WHERE kind = p_kind AND resource_id = p_resource_id LIMIT 1;
  IF twin IS NOT NULL THEN RETURN twin; END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('usage-record:' || p_kind || ':' || p_resource_id, 0));
  SELECT id INTO twin FROM usage_records WHERE kind = p_kind AND resource_id = p_resource_id LIMIT 1;
  RETURN twin;
END $$;

-- Whether recorded exports cover the whole period of usage partition `p_partition`, [p_from,
-- p_to), each with the row count the ledger holds for its period now: the one condition, besides
-- age, on which retention drops it (src/modules/billing/usage-retention.ts). An export whose count
-- no longer matches (a row recorded in its period after it ran: a transaction that began before
-- the period's end and committed after the export) covers nothing; export the period again.
-- Counted as the partition's rows plus the ledger's outside the partition's range, so the answer
-- is the same whether the partition is attached or already detached (the final check before
-- DROP). NULL bounds (the legacy partition's MINVALUE, or a detached table found orphaned) stand
-- for its rows' earliest / latest time; such a table without a row holds nothing to export.
CREATE FUNCTION usage_partition_exported(p_partition regclass, p_from timestamptz, p_to timestamptz) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
  lo timestamptz := p_from;
  hi timestamptz := p_to;
  first_at timestamptz;
  last_at timestamptz;
  covered tstzmultirange;
BEGIN
  IF lo IS NULL OR hi IS NULL THEN
    EXECUTE format('SELECT min(created_at), max(created_at) FROM %s', p_partition) INTO first_at, last_at;
    IF first_at IS NULL THEN RETURN true; END IF;
    lo := coalesce(lo, first_at);
    hi := coalesce(hi, last_at + interval '1 microsecond');
  END IF;
  EXECUTE format(
    'SELECT coalesce(range_agg(tstzrange(e.period_from, e.period_to)), ''{}'')
       FROM usage_exports e
      WHERE e.period_from < $2 AND e.period_to > $1
        AND e.row_count = (SELECT count(*) FROM usage_records u
                            WHERE u.created_at >= e.period_from AND u.created_at < e.period_to AND NOT (u.created_at >= $1 AND u.created_at < $2))
                        + (SELECT count(*) FROM %s p WHERE p.created_at >= e.period_from AND p.created_at < e.period_to)', p_partition)
    INTO covered USING lo, hi;
  RETURN covered @> tstzrange(lo, hi);
END $$;
