-- Issue 44, step 3 of 3: carrier_events becomes PARTITION BY RANGE (created_at), so retention
-- drops a period's partition (DETACH PARTITION ... CONCURRENTLY + DROP, src/platform/retention)
-- instead of deleting rows. docs/retention.md gives the steps and the lock each one takes.
--
-- The table as it was becomes the partition carrier_events_legacy, FROM (MINVALUE) TO the bound
-- 0040 set and 0041 validated: ATTACH finds the valid CHECK implying the bound and skips the
-- scan, so this whole migration holds its ACCESS EXCLUSIVE lock on the old table for
-- milliseconds whatever its size. Its indexes stay as they are: the parent declares only the
-- non-unique ones (which the old table has, identical, so ATTACH adopts them without a build),
-- and each partition has its own unique indexes (partitioned_tables.local_indexes), which the old
-- table already has too. An empty old table (a new database) is dropped instead.

ALTER TABLE carrier_events RENAME TO carrier_events_legacy;
ALTER TABLE carrier_events_legacy RENAME CONSTRAINT carrier_events_pkey TO carrier_events_legacy_pkey;
ALTER TABLE carrier_events_legacy RENAME CONSTRAINT carrier_events_carrier_carrier_event_id_key TO carrier_events_legacy_key;
ALTER INDEX carrier_events_nonce_idx RENAME TO carrier_events_legacy_nonce_idx;
ALTER INDEX carrier_events_failed_idx RENAME TO carrier_events_legacy_failed_idx;
ALTER INDEX carrier_events_unhandled_idx RENAME TO carrier_events_legacy_unhandled_idx;
ALTER INDEX carrier_events_session_pending_idx RENAME TO carrier_events_legacy_session_pending_idx;

-- Same columns, NOT NULLs and defaults. Ingest writes created_at = onceline_id_time(id), so a
-- row's partition follows from its id (lookups by id prune: onceline_id_window_start/end).
CREATE TABLE carrier_events (LIKE carrier_events_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (created_at);
CREATE INDEX carrier_events_failed_idx ON carrier_events (created_at) WHERE processed_at IS NULL AND error IS NOT NULL;
CREATE INDEX carrier_events_unhandled_idx ON carrier_events (created_at) WHERE processed_at IS NULL AND unhandled_since IS NOT NULL;
CREATE INDEX carrier_events_session_pending_idx ON carrier_events ((normalized->>'callSessionId'), created_at, id)
  WHERE processed_at IS NULL AND normalized ? 'callSessionId';

-- A partition of `parent` for [from, to): made empty beside the parent, given its own unique
-- indexes, then attached (SHARE UPDATE EXCLUSIVE on the parent: inserts go on; CREATE TABLE ...
-- PARTITION OF would take ACCESS EXCLUSIVE). Named after its start in UTC. Returns its name.
CREATE FUNCTION onceline_add_partition(p_parent text, p_from timestamptz, p_to timestamptz) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  name text := p_parent || '_p' || to_char(p_from AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
  idx text;
BEGIN
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS)', name, p_parent);
  FOREACH idx IN ARRAY (SELECT local_indexes FROM partitioned_tables WHERE parent = p_parent) LOOP
    EXECUTE format(idx, name);
  END LOOP;
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', p_parent, name, p_from, p_to);
  RETURN name;
END $$;

-- The old table `<parent>_legacy` (renamed by the caller) as the partition FROM (MINVALUE) TO the
-- bound 0040 set (0041 validated it, so ATTACH does not scan), or, when it holds no row (a new
-- database), dropped; then daily partitions for the bound's day (today's) and two more, which the
-- relay's maintenance keeps ahead after. Used by 0042 and 0043.
CREATE FUNCTION onceline_partition_legacy(p_parent text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  legacy text := p_parent || '_legacy';
  bound timestamptz := (SELECT legacy_until FROM partitioned_tables WHERE parent = p_parent);
  start timestamptz;
  has_rows boolean;
BEGIN
  EXECUTE format('SELECT EXISTS (SELECT FROM %I)', legacy) INTO has_rows;
  IF has_rows THEN
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', p_parent, legacy, bound);
    start := bound;
  ELSE
    EXECUTE format('DROP TABLE %I', legacy);
    UPDATE partitioned_tables SET legacy_until = NULL WHERE parent = p_parent;
    start := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  END IF;
  FOR i IN 0..2 LOOP
    PERFORM onceline_add_partition(p_parent, start + make_interval(days => i), start + make_interval(days => i + 1));
  END LOOP;
END $$;

SELECT onceline_partition_legacy('carrier_events');

-- The dedupe guard across partitions. A unique index of a partitioned table must contain the
-- partition key, so each partition's UNIQUE (carrier, carrier_event_id) only holds within it.
-- This takes a transaction-scoped advisory lock on the key (and on the signature nonce, if any),
-- then looks for a stored twin in every partition. VOLATILE: in READ COMMITTED its query takes a
-- fresh snapshot after the lock was granted, so it sees a twin that committed while this waited;
-- a twin still uncommitted holds the lock, so none is missed; and a twin written earlier by the
-- calling statement itself is seen too. Called by ingest's insert as its WHERE, one row at a
-- time, in the batch's key order (two batches sharing keys lock in one order).
CREATE FUNCTION carrier_event_twin(p_carrier text, p_key text, p_nonce text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin text;
BEGIN
  PERFORM carrier_event_lock(p_carrier, p_key, p_nonce);
  SELECT id INTO twin FROM carrier_events WHERE carrier = p_carrier AND carrier_event_id = p_key LIMIT 1;
  IF twin IS NULL AND p_nonce IS NOT NULL THEN
    SELECT id INTO twin FROM carrier_events WHERE carrier = p_carrier AND signature_nonce = p_nonce LIMIT 1;
  END IF;
  RETURN twin;
END $$;

-- The locks alone, for a transaction whose next statement looks for the twin itself (answered events).
CREATE FUNCTION carrier_event_lock(p_carrier text, p_key text, p_nonce text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('carrier-event:' || p_carrier || ':' || p_key, 0));
  IF p_nonce IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('carrier-event-nonce:' || p_carrier || ':' || p_nonce, 0));
  END IF;
END $$;
