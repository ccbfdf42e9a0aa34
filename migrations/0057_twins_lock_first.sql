-- usage_record_twin (0052), call_twin and call_timeline_twin (0055), made to lock first and look
-- once, as message_twin (0046) and carrier_event_twin (0042, 0056) do. They looked for a twin
-- without the lock and, finding none, took the key's lock and looked again: but a new key is the
-- usual case (a usage row, a call, a timeline entry are written once; a twin is a retry's rare
-- copy), so nearly every call read every partition's index twice: at the defaults some 14 to 16
-- partitions each (the ledger's 30-day periods kept 400 days, the call history's weeks kept 90,
-- two made ahead), so ~28 probes for a usage row, a call or a timeline entry (one per carrier
-- event of a call) where ~14 do. Looking once, after the lock, costs an uncontended lock in the
-- rare case of a committed twin and saves a whole look in the usual one.
--
-- The guarantee is the same: the key's transaction-scoped advisory lock first, then one look in
-- every partition with a fresh snapshot (VOLATILE, READ COMMITTED: the SELECT takes its snapshot
-- after the lock was granted), so a twin committed while this waited is seen, one still in flight
-- holds the lock, and rows the calling statement wrote are seen too. The lock orders stated in
-- 0052 and 0055 stand: the callers are unchanged, and the one case where the lock is now taken
-- and was not (a twin committed before the call) is one the old body met already (a twin
-- committed between its two looks: the lock taken, then the twin found), so no order of locks is new.
--
-- The lock keys are the ones 0052's onceline_twin_lock took: hashtextextended of the same text,
-- seed 0. That is what keeps the guard whole while this is deployed: a session takes in the new
-- body only once it reads the catalog's change (a statement already running when this commits
-- goes on with the old one), and the app's statements are the same before and after, so for a
-- while some sessions run the old body and others the new; on the same key they still exclude
-- each other, whichever runs which. A key of its own would let an old and a new body of one key
-- both find no twin, and both insert.
--
-- The lock is taken as an IF condition, as in 0056: a table-free expression that plpgsql evaluates
-- without starting the executor, where onceline_twin_lock (kept: call_command_send uses it) ran a
-- PERFORM through SPI inside a function call of its own. Signatures unchanged: callers are as they were.
CREATE OR REPLACE FUNCTION usage_record_twin(p_kind text, p_resource_id text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin text;
BEGIN
  IF pg_advisory_xact_lock(hashtextextended('usage-record:' || p_kind || ':' || p_resource_id, 0)) IS NULL THEN NULL; END IF;
  SELECT id INTO twin FROM usage_records WHERE kind = p_kind AND resource_id = p_resource_id LIMIT 1;
  RETURN twin;
END $$;

CREATE OR REPLACE FUNCTION call_twin(p_carrier text, p_carrier_call_id text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin text;
BEGIN
  IF pg_advisory_xact_lock(hashtextextended('call:' || p_carrier || ':' || p_carrier_call_id, 0)) IS NULL THEN NULL; END IF;
  SELECT id INTO twin FROM calls WHERE carrier = p_carrier AND carrier_call_id = p_carrier_call_id LIMIT 1;
  RETURN twin;
END $$;

CREATE OR REPLACE FUNCTION call_timeline_twin(p_carrier_event_id text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin bigint;
BEGIN
  IF pg_advisory_xact_lock(hashtextextended('call-timeline:' || p_carrier_event_id, 0)) IS NULL THEN NULL; END IF;
  SELECT id INTO twin FROM call_timeline WHERE carrier_event_id = p_carrier_event_id LIMIT 1;
  RETURN twin;
END $$;
