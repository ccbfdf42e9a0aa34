-- Issue 44, phase 2, step 3 of 4: messages PARTITION BY RANGE (onceline_id_key(id)) and
-- message_status_history PARTITION BY RANGE (onceline_id_key(message_id)): a message's history
-- rows are in the partition of the same period as the message, and retention drops both together
-- (src/modules/messaging/messages-retention.ts). docs/retention.md gives the steps and their locks.
--
-- As 0042: each old table becomes the partition <table>_legacy FROM (MINVALUE) TO the bound 0044
-- set and 0045 validated (ATTACH skips the scan), its indexes adopted by the parent's identical
-- ones (none built); an empty old table (a new database) is dropped instead.
--
-- The foreign key message_status_history.message_id → messages.id goes: a foreign key into a
-- partitioned table needs a unique constraint on the parent containing the partition key, which
-- an expression key cannot have; and it would make retention order-dependent (a referenced
-- partition cannot be detached while a referencing row exists). What replaces it: history rows
-- are written only by the statements that move their message (message-moves.ts, send-outcomes.ts,
-- receipts-and-inbound.ts, dispatch-claims.ts, opt-out-keywords.ts: the INSERT selects from the
-- CTE of the moved rows), and both tables' partitions of a period are dropped under the same
-- retention, the history's only once its messages' partition holds nothing unsettled.

ALTER TABLE message_status_history DROP CONSTRAINT message_status_history_message_id_fkey;

-- `p_table` renamed `<p_table>_legacy`, with its indexes (and the constraints they back) named
-- after it renamed the same way, which frees their names for the parent's; then the parent: same
-- columns, NOT NULLs, defaults and CHECKs (not the legacy bound), PARTITION BY RANGE
-- (onceline_id_key(p_key_column)), no partition yet. The caller declares the parent's foreign keys
-- and indexes before onceline_partition_legacy attaches the old table (so ATTACH adopts the old
-- table's identical ones: none validated, none built). Used by 0046 and 0047.
CREATE FUNCTION onceline_partitioned_by_id(p_table text, p_key_column text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  legacy text := p_table || '_legacy';
  idx record;
BEGIN
  EXECUTE format('ALTER TABLE %I RENAME TO %I', p_table, legacy);
  FOR idx IN SELECT i.relname AS name, c.conname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
               LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.conrelid = x.indrelid
              WHERE x.indrelid = legacy::regclass AND left(i.relname, length(p_table) + 1) = p_table || '_' LOOP
    IF idx.conname IS NOT NULL THEN
      EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', legacy, idx.conname, legacy || substr(idx.name, length(p_table) + 1));
    ELSE
      EXECUTE format('ALTER INDEX %I RENAME TO %I', idx.name, legacy || substr(idx.name, length(p_table) + 1));
    END IF;
  END LOOP;
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (onceline_id_key(%I))', p_table, legacy, p_key_column);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', p_table, legacy || '_bound');
END $$;

SELECT onceline_partitioned_by_id('messages', 'id');
ALTER TABLE messages ADD CONSTRAINT messages_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);
CREATE INDEX messages_account_idx ON messages (account_id, id DESC);
CREATE INDEX messages_unsent_slot_idx ON messages (from_number, send_slot)
  WHERE direction = 'outbound' AND status IN ('queued', 'scheduled', 'sending');

SELECT onceline_partitioned_by_id('message_status_history', 'message_id');
ALTER SEQUENCE message_status_history_id_seq OWNED BY message_status_history.id;
CREATE INDEX message_status_history_message_idx ON message_status_history (message_id, id);

SELECT onceline_partition_legacy('messages');
SELECT onceline_partition_legacy('message_status_history');

-- "A carrier message id is one message", across partitions. Each partition's UNIQUE (carrier,
-- carrier_message_id) holds only within it, and an inbound message's partition is its new id's
-- (a copy of it delivered after a boundary, under another carrier event, lands in the next one).
-- As carrier_event_twin (0042): a transaction-scoped advisory lock on the key, then a look in
-- every partition; VOLATILE, so under READ COMMITTED the look takes a fresh snapshot after the
-- lock was granted (a twin committed meanwhile is seen, one in flight still holds the lock, one
-- written earlier by the calling statement is seen). Called as the inbound INSERT's WHERE
-- (receipts-and-inbound.ts), one row at a time; the partitions' unique indexes stay as a backstop.
CREATE FUNCTION message_twin(p_carrier text, p_carrier_message_id text) RETURNS text LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
  twin text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('message:' || p_carrier || ':' || p_carrier_message_id, 0));
  SELECT id INTO twin FROM messages WHERE carrier = p_carrier AND carrier_message_id = p_carrier_message_id LIMIT 1;
  RETURN twin;
END $$;
