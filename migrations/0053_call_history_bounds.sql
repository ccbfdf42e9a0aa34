-- Issue 44 phase 2, the call history, step 1 of 3 (each migration is its own transaction), as
-- 0040 did for carrier_events: each table's future bound as a CHECK added NOT VALID (ACCESS
-- EXCLUSIVE for an instant, no scan) and its row of partitioned_tables. 0054 validates the
-- bounds, 0055 makes each table the partition <table>_legacy of a new partitioned parent.
--
-- The partition key is the call's time, so a call and its history share a period and age out
-- together: calls by created_at, which is the time in the call's id (CallTransitions.create
-- writes created_at = onceline_id_time(id); rows stored before were written now() right after
-- the id was minted); call_legs, call_timeline and call_transcript_fragments by
-- onceline_id_time(call_id), an expression of a column they already have (no column added, no
-- row rewritten). call_command_sends by first_sent_at (its call_id may be NULL: a hangup of a
-- stray leg): sends happen while the call lives, so a period of sends is released once no call
-- begun before its end is still live (src/modules/calls/calls-retention.ts).

INSERT INTO partitioned_tables (parent, legacy_until, local_indexes)
SELECT t.parent, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days', t.local_indexes
  FROM (VALUES
    ('calls', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)',
      -- one call per carrier call: held across partitions by call_twin (0055)
      'CREATE UNIQUE INDEX ON %I (carrier, carrier_call_id)',
      -- Retention's question, "does this partition still hold a call not ended?"
      'CREATE INDEX ON %I (created_at) WHERE ended_at IS NULL']),
    -- The unique keys holding call_id are whole within a partition: every row of one call_id is in the same one.
    ('call_legs', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)',
      'CREATE UNIQUE INDEX ON %I (call_id, target_index, attempt)']),
    ('call_timeline', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)',
      -- one entry per stored carrier event: held across partitions by call_timeline_twin (0055)
      'CREATE UNIQUE INDEX ON %I (carrier_event_id)']),
    ('call_transcript_fragments', ARRAY[
      'CREATE UNIQUE INDEX ON %I (id)',
      'CREATE UNIQUE INDEX ON %I (call_id, occurred_at, text)']),
    ('call_command_sends', ARRAY[
      -- one row per command id: held across partitions by call_command_send (0055)
      'CREATE UNIQUE INDEX ON %I (command_id)'])
  ) AS t (parent, local_indexes);

DO $$
DECLARE
  bound timestamptz := (SELECT legacy_until FROM partitioned_tables WHERE parent = 'calls');
BEGIN
  EXECUTE format('ALTER TABLE calls ADD CONSTRAINT calls_legacy_bound CHECK (created_at < %L) NOT VALID', bound);
  -- The partition constraint of an expression key is "key IS NOT NULL AND key < bound": the CHECK says both, so ATTACH finds it implied.
  EXECUTE format('ALTER TABLE call_legs ADD CONSTRAINT call_legs_legacy_bound CHECK (onceline_id_time(call_id) IS NOT NULL AND onceline_id_time(call_id) < %L) NOT VALID', bound);
  EXECUTE format('ALTER TABLE call_timeline ADD CONSTRAINT call_timeline_legacy_bound CHECK (onceline_id_time(call_id) IS NOT NULL AND onceline_id_time(call_id) < %L) NOT VALID', bound);
  EXECUTE format('ALTER TABLE call_transcript_fragments ADD CONSTRAINT call_transcript_fragments_legacy_bound CHECK (onceline_id_time(call_id) IS NOT NULL AND onceline_id_time(call_id) < %L) NOT VALID', bound);
  EXECUTE format('ALTER TABLE call_command_sends ADD CONSTRAINT call_command_sends_legacy_bound CHECK (first_sent_at < %L) NOT VALID', bound);
END $$;
