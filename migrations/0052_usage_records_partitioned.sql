-- Issue 44 phase 2, usage_records step 3 of 3: the billing ledger becomes PARTITION BY RANGE
-- (created_at), as carrier_events did in 0042 (the same steps and locks; docs/retention.md).
-- created_at stays what it was (now() of the recording transaction: the billing period a row
-- belongs to). Retention drops a partition only after an export covering its whole period whose
-- row count still matches (usage_partition_exported, below), never on age alone.
--
-- The old table becomes the partition usage_records_legacy (its rows, indexes, CHECKs and foreign
-- key as they were: no scan, no index build, onceline_partition_table below); the parent declares
-- the CHECKs (new partitions copy them, 0050), the foreign key to accounts and the non-unique
-- (account_id, created_at) index. Each partition has its own UNIQUE (id), UNIQUE (kind,
-- resource_id) (partitioned_tables.local_indexes).

-- The steps 0042 and 0043 wrote out by hand, as one function for this and the call history
-- (0055): the table `p_table` (its bound CHECK <table>_legacy_bound valid, 0040's way) becomes the partition
-- <table>_legacy of a new parent of the same name, PARTITION BY RANGE (p_key):
--  - the old table and its indexes (with the constraints they back) take the name <table>_legacy…;
--  - the parent: the same columns, defaults and CHECKs (not the bound); the old table's foreign keys
--    (ATTACH adopts the old table's own, already valid) and non-unique indexes (adopted too, same
--    definitions: none built); its sequences owned by the parent;
--  - onceline_partition_legacy (0042): the old table attached, or dropped when empty; partitions after.
-- Unique indexes stay the old table's own: each partition gets its own (partitioned_tables.local_indexes).
CREATE FUNCTION onceline_partition_table(p_table text, p_key text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  legacy constant text := p_table || '_legacy';
  r record;
BEGIN
  EXECUTE format('ALTER TABLE %I RENAME TO %I', p_table, legacy);
  FOR r IN SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = legacy::regclass LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', r.name, legacy || substr(r.name, length(p_table) + 1));
  END LOOP;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (%s)', p_table, legacy, p_key);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', p_table, legacy || '_bound');
  FOR r IN SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = legacy::regclass AND contype = 'f' LOOP
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', p_table, r.conname, r.def);
  END LOOP;
  FOR r IN SELECT c.relname AS name, substring(pg_get_indexdef(i.indexrelid) FROM ' USING .*$') AS def
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = legacy::regclass AND NOT i.indisunique LOOP
    EXECUTE format('CREATE INDEX %I ON %I %s', p_table || substr(r.name, length(legacy) + 1), p_table, r.def);
  END LOOP;
  FOR r IN SELECT s.relname AS seq, a.attname AS col FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
             JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
            WHERE d.refobjid = legacy::regclass AND d.deptype = 'a' LOOP
    EXECUTE format('ALTER SEQUENCE %I OWNED BY %I.%I', r.seq, p_table, r.col);
  END LOOP;
  PERFORM onceline_partition_legacy(p_table);
END $$;

SELECT onceline_partition_table('usage_records', 'created_at');

-- The lock of a twin guard (this one and the call history's, 0055): transaction-scoped, on a hash
-- of `key` (the guard's name and key). Always true, for use in a guard's condition. Each guard is
-- a function of its own, with its own static looks: plpgsql caches their plans, where one generic
-- guard would run its looks as dynamic SQL, planned again at every call.
CREATE FUNCTION onceline_twin_lock(p_key text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_key, 0));
  RETURN true;
END $$;

-- "A resource is billed once per kind", across partitions (each partition's UNIQUE (kind,
-- resource_id) holds only within it): the stored row of this key, if any. As outbox_job_twin
-- (0043): looked for first without a lock (a committed usage row is final: the ledger is never
-- updated), and only when none is found under the key's transaction-scoped advisory lock, with a
-- fresh snapshot (VOLATILE, READ COMMITTED): a twin committed meanwhile is seen, one in flight
-- holds the lock (UsageLedger.recordFromCte, the only writer, calls this as its INSERT's WHERE).
-- Rows the calling statement wrote are seen too. Lock order: the writer holds its resource's row
-- lock (message, call, number) before this lock, never the other way round.
CREATE FUNCTION usage_record_twin(p_kind text, p_resource_id text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE twin text := (SELECT id FROM usage_records WHERE kind = p_kind AND resource_id = p_resource_id LIMIT 1);
BEGIN
  IF twin IS NULL AND onceline_twin_lock('usage-record:' || p_kind || ':' || p_resource_id) THEN twin := (SELECT id FROM usage_records WHERE kind = p_kind AND resource_id = p_resource_id LIMIT 1); END IF;
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
