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

-- calls
ALTER TABLE calls RENAME TO calls_legacy;
ALTER TABLE calls_legacy RENAME CONSTRAINT calls_pkey TO calls_legacy_pkey;
ALTER TABLE calls_legacy RENAME CONSTRAINT calls_carrier_carrier_call_id_key TO calls_legacy_key;
ALTER INDEX calls_account_idx RENAME TO calls_legacy_account_idx;
CREATE TABLE calls (LIKE calls_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (created_at);
ALTER TABLE calls DROP CONSTRAINT calls_legacy_bound;
ALTER TABLE calls ADD CONSTRAINT calls_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id);
CREATE INDEX calls_account_idx ON calls (account_id, id DESC);
SELECT onceline_partition_legacy('calls');

-- call_legs
ALTER TABLE call_legs RENAME TO call_legs_legacy;
ALTER TABLE call_legs_legacy RENAME CONSTRAINT call_legs_pkey TO call_legs_legacy_pkey;
ALTER TABLE call_legs_legacy RENAME CONSTRAINT call_legs_call_id_target_index_attempt_key TO call_legs_legacy_key;
CREATE TABLE call_legs (LIKE call_legs_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (onceline_id_time(call_id));
ALTER TABLE call_legs DROP CONSTRAINT call_legs_legacy_bound;
SELECT onceline_partition_legacy('call_legs');

-- call_timeline (its id sequence now owned by the parent)
ALTER TABLE call_timeline RENAME TO call_timeline_legacy;
ALTER TABLE call_timeline_legacy RENAME CONSTRAINT call_timeline_pkey TO call_timeline_legacy_pkey;
ALTER TABLE call_timeline_legacy RENAME CONSTRAINT call_timeline_carrier_event_id_key TO call_timeline_legacy_key;
ALTER INDEX call_timeline_call_idx RENAME TO call_timeline_legacy_call_idx;
CREATE TABLE call_timeline (LIKE call_timeline_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (onceline_id_time(call_id));
ALTER SEQUENCE call_timeline_id_seq OWNED BY call_timeline.id;
ALTER TABLE call_timeline DROP CONSTRAINT call_timeline_legacy_bound;
CREATE INDEX call_timeline_call_idx ON call_timeline (call_id, received_at);
SELECT onceline_partition_legacy('call_timeline');

-- call_transcript_fragments (its id sequence now owned by the parent)
ALTER TABLE call_transcript_fragments RENAME TO call_transcript_fragments_legacy;
ALTER TABLE call_transcript_fragments_legacy RENAME CONSTRAINT call_transcript_fragments_pkey TO call_transcript_fragments_legacy_pkey;
ALTER TABLE call_transcript_fragments_legacy RENAME CONSTRAINT call_transcript_fragments_call_id_occurred_at_text_key TO call_transcript_fragments_legacy_key;
CREATE TABLE call_transcript_fragments (LIKE call_transcript_fragments_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (onceline_id_time(call_id));
ALTER SEQUENCE call_transcript_fragments_id_seq OWNED BY call_transcript_fragments.id;
ALTER TABLE call_transcript_fragments DROP CONSTRAINT call_transcript_fragments_legacy_bound;
SELECT onceline_partition_legacy('call_transcript_fragments');

-- call_command_sends
ALTER TABLE call_command_sends RENAME TO call_command_sends_legacy;
ALTER TABLE call_command_sends_legacy RENAME CONSTRAINT call_command_sends_pkey TO call_command_sends_legacy_pkey;
ALTER INDEX call_command_sends_call_idx RENAME TO call_command_sends_legacy_call_idx;
CREATE TABLE call_command_sends (LIKE call_command_sends_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (first_sent_at);
ALTER TABLE call_command_sends DROP CONSTRAINT call_command_sends_legacy_bound;
CREATE INDEX call_command_sends_call_idx ON call_command_sends (call_id);
SELECT onceline_partition_legacy('call_command_sends');

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
DECLARE
  twin text;
BEGIN
  SELECT id INTO twin FROM calls WHERE carrier = p_carrier AND carrier_call_id = p_carrier_call_id LIMIT 1;
  IF twin IS NOT NULL THEN RETURN twin; END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('call:' || p_carrier || ':' || p_carrier_call_id, 0));
  SELECT id INTO twin FROM calls WHERE carrier = p_carrier AND carrier_call_id = p_carrier_call_id LIMIT 1;
  RETURN twin;
END $$;

-- "One timeline entry per stored carrier event" across partitions: as call_twin, for the
-- timeline's INSERTs (CallTimeline), which hold their call's row lock first.
CREATE FUNCTION call_timeline_twin(p_carrier_event_id text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin bigint;
BEGIN
  SELECT id INTO twin FROM call_timeline WHERE carrier_event_id = p_carrier_event_id LIMIT 1;
  IF twin IS NOT NULL THEN RETURN twin; END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('call-timeline:' || p_carrier_event_id, 0));
  SELECT id INTO twin FROM call_timeline WHERE carrier_event_id = p_carrier_event_id LIMIT 1;
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
  PERFORM pg_advisory_xact_lock(hashtextextended('call-command:' || p_command_id, 0));
  RETURN QUERY UPDATE call_command_sends s SET sends = s.sends + 1 WHERE s.command_id = p_command_id RETURNING s.first_sent_at, s.sends;
  IF FOUND THEN RETURN; END IF;
  RETURN QUERY INSERT INTO call_command_sends AS s (command_id, call_id) VALUES (p_command_id, p_call_id) RETURNING s.first_sent_at, s.sends;
END $$;
