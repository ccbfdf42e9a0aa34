-- Issue 44 phase 2, the call history, step 3 of 3: calls, call_legs, call_timeline,
-- call_transcript_fragments and call_command_sends become partitioned by the call's time (0053
-- says which key each has), as carrier_events did in 0042: each old table is attached as the
-- partition <table>_legacy (no scan: the CHECK 0054 validated implies its bound; its indexes are
-- adopted, none built), the parents declare the CHECKs (new partitions copy them), the foreign
-- key to accounts and the non-unique indexes; each partition has its own unique indexes
-- (partitioned_tables.local_indexes). ACCESS EXCLUSIVE on each old table for the transaction.
--
-- The history's foreign keys to calls are dropped. A foreign key into a partitioned table must
-- name the referenced table's partition key (calls' created_at), a column the history would
-- have to carry: added and back-filled on every history row (a rewrite of each table), which
-- this migration does not do. The history is written only by the calls module, in the
-- transaction that holds its call (found or created first), and it shares its call's partition
-- key (the call id's time), so a call and its history are dropped together.

ALTER TABLE call_legs DROP CONSTRAINT call_legs_call_id_fkey;
ALTER TABLE call_timeline DROP CONSTRAINT call_timeline_call_id_fkey;
ALTER TABLE call_transcript_fragments DROP CONSTRAINT call_transcript_fragments_call_id_fkey;
ALTER TABLE call_command_sends DROP CONSTRAINT call_command_sends_call_id_fkey;

-- onceline_partition_table (0052): each old table attached as <table>_legacy (indexes, CHECKs,
-- calls' foreign key to accounts, the id sequences of the timeline and the fragments, all carried
-- over to the new parent), partitioned by its call's time.
SELECT onceline_partition_table('calls', 'created_at');
SELECT onceline_partition_table(t, 'onceline_id_time(call_id)') FROM unnest(ARRAY['call_legs', 'call_timeline', 'call_transcript_fragments']) AS t;
SELECT onceline_partition_table('call_command_sends', 'first_sent_at');

-- "One call per carrier call" across partitions (each partition's UNIQUE (carrier,
-- carrier_call_id) holds only within it): the stored call of this carrier call, if any. As
-- outbox_job_twin (0043): looked for first without a lock (a stored call's session is final: a
-- placeholder is replaced once, and a call is never removed but by retention), then under the
-- key's transaction-scoped advisory lock with a fresh snapshot (VOLATILE, READ COMMITTED): a twin
-- committed meanwhile is seen, one in flight holds the lock. Called as the WHERE of the call's
-- INSERT and of the UPDATE naming a placed call's session (CallTransitions). Lock order: a
-- transaction holding a call row's lock may take this lock (naming its session); one holding
-- this lock never waits for a call row's (a new call's insert locks none).
CREATE FUNCTION call_twin(p_carrier text, p_carrier_call_id text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE twin text := (SELECT id FROM calls WHERE carrier = p_carrier AND carrier_call_id = p_carrier_call_id LIMIT 1);
BEGIN
  IF twin IS NULL AND onceline_twin_lock('call:' || p_carrier || ':' || p_carrier_call_id) THEN twin := (SELECT id FROM calls WHERE carrier = p_carrier AND carrier_call_id = p_carrier_call_id LIMIT 1); END IF;
  RETURN twin;
END $$;

-- "One timeline entry per stored carrier event" across partitions: as call_twin, for the
-- timeline's INSERTs (CallTimeline), which hold their call's row lock first.
CREATE FUNCTION call_timeline_twin(p_carrier_event_id text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE twin bigint := (SELECT id FROM call_timeline WHERE carrier_event_id = p_carrier_event_id LIMIT 1);
BEGIN
  IF twin IS NULL AND onceline_twin_lock('call-timeline:' || p_carrier_event_id) THEN twin := (SELECT id FROM call_timeline WHERE carrier_event_id = p_carrier_event_id LIMIT 1); END IF;
  RETURN twin;
END $$;

-- One more send of command `p_command_id` (of call `p_call_id`, NULL for none): its row bumped,
-- or made when there is none; returns when the command id first went out and how often it has.
-- It replaces INSERT ... ON CONFLICT (command_id) DO UPDATE, which a partitioned table cannot
-- name (its unique index would have to hold the partition key). Under the command id's
-- transaction-scoped advisory lock, each statement with a fresh snapshot (VOLATILE, READ
-- COMMITTED): a row committed by another send meanwhile is bumped, never made twice. The
-- caller decides whether the command is still wanted, in the same statement, before calling this
-- (CallCommandSends.claim).
CREATE FUNCTION call_command_send(p_command_id text, p_call_id text) RETURNS TABLE (first_sent_at timestamptz, sends integer) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM onceline_twin_lock('call-command:' || p_command_id);
  RETURN QUERY UPDATE call_command_sends s SET sends = s.sends + 1 WHERE s.command_id = p_command_id RETURNING s.first_sent_at, s.sends;
  IF FOUND THEN RETURN; END IF;
  RETURN QUERY INSERT INTO call_command_sends AS s (command_id, call_id) VALUES (p_command_id, p_call_id) RETURNING s.first_sent_at, s.sends;
END $$;
