-- Issue 44, phase 2 (messaging and customer webhooks), step 1 of 4 (each migration is its own
-- transaction): messages, message_status_history, outbound_events, webhook_deliveries and
-- webhook_delivery_attempts become time-partitioned the way carrier_events did (0040-0043,
-- docs/retention.md), with one difference: their partition key is an expression of an id
-- column, not created_at, so no statement writing them has to name it:
--   messages, outbound_events          onceline_id_key(id)           their own id's time
--   message_status_history             onceline_id_key(message_id)   its message's id time
--   webhook_deliveries                 onceline_id_key(event_id)     its event's id time
--   webhook_delivery_attempts          onceline_id_key(delivery_id)  its delivery's id time
-- A message and its history, an event and its deliveries, land in partitions of the same period
-- and age out together; a unique key that contains the column of the partition key (messages'
-- id, deliveries' (event_id, endpoint_id), attempts' (delivery_id, attempt)) is unique across
-- partitions by each partition's own unique index, as its rows can only be in one partition.
--
-- This step: the key function, partitioned_tables' rows, and each table's future bound as a CHECK
-- on its key, added NOT VALID (ACCESS EXCLUSIVE for an instant, no scan). 0045 validates them
-- (SHARE UPDATE EXCLUSIVE: writes go on), 0046 and 0047 attach the old tables without a scan.

-- The partition key of a row stored under one of our ids: the millisecond in the id
-- (onceline_id_time, 0040). plpgsql, so it is one function call wherever it appears (the
-- partition key, a lookup's filter), not the 40-node inlined SQL body that phase 1 measured
-- compiling again at every execution; IMMUTABLE, as a partition key must be.
CREATE FUNCTION onceline_id_key(id text) RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT AS $$
BEGIN
  RETURN onceline_id_time(id);
END $$;

-- The same for the other side of a lookup, `onceline_id_key(id) = onceline_id_key_of($1)`:
-- STABLE, so a prepared lookup is planned once and pruned when it starts (phase 1 measured an
-- immutable bound folded at plan time making every execution plan again).
CREATE FUNCTION onceline_id_key_of(id text) RETURNS timestamptz LANGUAGE plpgsql STABLE PARALLEL SAFE STRICT AS $$
BEGIN
  RETURN onceline_id_time(id);
END $$;

-- Partitions copy their parent's CHECK constraints (ATTACH refuses a table missing one: "child
-- table is missing constraint"); carrier_events and outbox_jobs have none on their parents, so
-- nothing changes for them. The one change to onceline_add_partition (0042), made to its
-- definition as it stands (a no-op where it is made already).
DO $$
DECLARE
  fn constant regprocedure := 'onceline_add_partition(text, timestamptz, timestamptz)';
BEGIN
  IF position('INCLUDING CONSTRAINTS' IN pg_get_functiondef(fn)) = 0 THEN
    EXECUTE replace(pg_get_functiondef(fn), 'INCLUDING DEFAULTS)', 'INCLUDING DEFAULTS INCLUDING CONSTRAINTS)');
  END IF;
  IF position('INCLUDING CONSTRAINTS' IN pg_get_functiondef(fn)) = 0 THEN RAISE EXCEPTION 'onceline_add_partition: its LIKE ... INCLUDING DEFAULTS was not found'; END IF;
END $$;

-- The day after tomorrow (UTC), as 0040: rows written until 0046/0047 have run still fit the old tables.
INSERT INTO partitioned_tables (parent, legacy_until, local_indexes)
SELECT t.parent, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days', t.local_indexes
  FROM (VALUES
    ('messages', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)',
      -- Receipts find their message by it; the cross-partition guard is message_twin (0046).
      'CREATE UNIQUE INDEX ON %I (carrier, carrier_message_id)',
      -- Retention's question, "does this partition still hold a message not yet settled?".
      'CREATE INDEX ON %I (id) WHERE status IN (''queued'', ''scheduled'', ''sending'') OR outcome_unknown_since IS NOT NULL'
    ]),
    ('message_status_history', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)'
    ]),
    ('outbound_events', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)'
    ]),
    ('webhook_deliveries', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)',
      -- One delivery per (event, endpoint): the partition key is the event's, so this is global.
      'CREATE UNIQUE INDEX ON %I (event_id, endpoint_id)',
      -- Retention's question, "does this partition still owe a delivery?", and its events' and
      -- attempts' partitions' ("is one of these events' / deliveries' still owed?").
      'CREATE INDEX ON %I (event_id, id) WHERE status IN (''pending'', ''parked'')'
    ]),
    ('webhook_delivery_attempts', ARRAY[
      'CREATE UNIQUE INDEX ON %I (delivery_id, attempt)'
    ])
  ) AS t(parent, local_indexes);

-- The bound on each table's partition key (0040 put it on created_at; here the key is the id's
-- time). `IS NOT NULL` too: the partition constraint of an expression key includes it, and ATTACH
-- proves constraints by weak implication (a CHECK passes when NULL), so without it 0046/0047
-- would scan each old table under ACCESS EXCLUSIVE (measured: seconds, bench:messaging-migration).
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN SELECT p.parent, p.legacy_until, k.key_column
             FROM partitioned_tables p
             JOIN (VALUES ('messages', 'id'), ('message_status_history', 'message_id'), ('outbound_events', 'id'),
                          ('webhook_deliveries', 'event_id'), ('webhook_delivery_attempts', 'delivery_id')) AS k(parent, key_column)
               ON k.parent = p.parent LOOP
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (onceline_id_key(%I) IS NOT NULL AND onceline_id_key(%I) < %L) NOT VALID', t.parent, t.parent || '_legacy_bound', t.key_column, t.key_column, t.legacy_until);
  END LOOP;
END $$;
