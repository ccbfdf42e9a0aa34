-- Issue 44, step 1 of 3 (each migration is its own transaction): what time-partitioned tables
-- need, and carrier_events' and outbox_jobs' future bound as a CHECK added NOT VALID.
--
-- Adding a CHECK ... NOT VALID takes ACCESS EXCLUSIVE on the table for an instant (no scan: only
-- new rows are checked). 0041 validates it under SHARE UPDATE EXCLUSIVE (writes go on during the
-- scan), and 0042 (0043) then attaches the table as a partition of a new carrier_events
-- (outbox_jobs) without scanning it again (the valid CHECK proves the partition bound).

-- Our ids (src/platform/ids.ts newId, onceline_id()) start, after `<prefix>_`, with 48 bits of
-- milliseconds in 10 Crockford base32 digits: the time the id was minted. An id that is not one
-- of ours decodes to some time (never an error): a lookup by it finds nothing, as it should.
CREATE FUNCTION onceline_id_ms(id text) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
  SELECT (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 1, 1)) - 1)::bigint * 35184372088832
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 2, 1)) - 1)::bigint * 1099511627776
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 3, 1)) - 1)::bigint * 34359738368
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 4, 1)) - 1)::bigint * 1073741824
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 5, 1)) - 1)::bigint * 33554432
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 6, 1)) - 1)::bigint * 1048576
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 7, 1)) - 1)::bigint * 32768
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 8, 1)) - 1)::bigint * 1024
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 9, 1)) - 1)::bigint * 32
       + (strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, strpos(id, '_') + 10, 1)) - 1)::bigint
$$;

-- The partition key of a row stored under this id: ingest writes created_at = onceline_id_time(id).
CREATE FUNCTION onceline_id_time(id text) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
  SELECT to_timestamp(onceline_id_ms(id) / 1000.0)
$$;

-- Where a lookup by id looks: created_at within 5 minutes of the id's time. Rows ingest writes
-- have created_at equal to it; rows stored before 0042 (created_at = now() of their transaction,
-- the id minted by the app just before) are within milliseconds of it. A lookup
-- `created_at BETWEEN onceline_id_window_start(x) AND onceline_id_window_end(x)` is pruned to the
-- partition (or, near a boundary, two) that can hold x when its plan starts. Measured choices
-- (bench/partition-period.mjs, docs/retention.md): STABLE, though they are immutable, because an
-- immutable bound is folded at plan time, which makes a custom plan look cheaper than the generic
-- one, so a prepared lookup was planned again at every execution; and plpgsql, because an
-- inlined SQL body is a 40-node expression compiled again at every execution (for the pruning
-- and the filter), which cost more than the partitions it spared.
CREATE FUNCTION onceline_id_window_start(id text) RETURNS timestamptz LANGUAGE plpgsql STABLE PARALLEL SAFE STRICT AS $$
BEGIN
  RETURN to_timestamp((onceline_id_ms(id) - 300000) / 1000.0);
END $$;
CREATE FUNCTION onceline_id_window_end(id text) RETURNS timestamptz LANGUAGE plpgsql STABLE PARALLEL SAFE STRICT AS $$
BEGIN
  RETURN to_timestamp((onceline_id_ms(id) + 300000) / 1000.0);
END $$;

-- The time-partitioned tables: where a table's rows stored before it was partitioned end
-- (legacy_until: its first partition, `<table>_legacy`, holds everything before), and the indexes
-- every partition gets of its own (format() templates over the partition's name): unique indexes
-- a partitioned parent cannot declare without the partition key. Partitions are made by
-- onceline_add_partition (0042) and dropped by the relay's maintenance (src/platform/retention).
CREATE TABLE partitioned_tables (
  parent        text PRIMARY KEY,
  legacy_until  timestamptz,
  local_indexes text[] NOT NULL
);

-- The day after tomorrow (UTC): rows ingest writes until 0042 has run still fit the old table.
INSERT INTO partitioned_tables (parent, legacy_until, local_indexes)
VALUES ('carrier_events', date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days', ARRAY[
  'CREATE UNIQUE INDEX ON %I (id)',
  'CREATE UNIQUE INDEX ON %I (carrier, carrier_event_id)',
  'CREATE UNIQUE INDEX ON %I (carrier, signature_nonce) WHERE signature_nonce IS NOT NULL',
  -- Retention's question, "does this partition still owe work?", answered from the few unprocessed rows.
  'CREATE INDEX ON %I (created_at) WHERE processed_at IS NULL'
]);

INSERT INTO partitioned_tables (parent, legacy_until, local_indexes)
VALUES ('outbox_jobs', date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days', ARRAY[
  'CREATE UNIQUE INDEX ON %I (id)',
  'CREATE UNIQUE INDEX ON %I (job_id)',
  -- Retention's question, "does this partition still hold a job without an outcome?".
  'CREATE INDEX ON %I (created_at) WHERE completed_at IS NULL AND failed_at IS NULL'
]);

DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT parent, legacy_until FROM partitioned_tables LOOP
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (created_at < %L) NOT VALID', t.parent, t.parent || '_legacy_bound', t.legacy_until);
  END LOOP;
END $$;
