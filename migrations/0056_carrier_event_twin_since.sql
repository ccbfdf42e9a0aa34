-- The dedupe guard, told where a twin can be. carrier_event_twin (0042) looks in every partition
-- of carrier_events: 4 days of retention and those made ahead, 7 with daily partitions, each an
-- index probe for every new event. A copy of an event can have reached us only after the event
-- happened: where the carrier stamps its events with a time that every retry repeats (Telnyx's
-- occurred_at, Vonage's timestamp), ingest passes that time less a margin for the carrier's clock
-- as p_since, and the look reads only the partitions from it on (pruned when the plan starts); one
-- with no such time (Twilio's callbacks) passes NULL and every partition is read, as before.
-- The lock and the fresh snapshot after it are unchanged (see 0042): the guard's proof stands;
-- p_since only leaves out partitions that cannot hold a twin.
--
-- The advisory locks are taken as IF conditions, not by PERFORM carrier_event_lock(…): plpgsql
-- evaluates a table-free expression without starting the executor, where PERFORM runs a query
-- through SPI, twice nested here; bench/partition-period.mjs measures the difference.
CREATE FUNCTION carrier_event_twin(p_carrier text, p_key text, p_nonce text, p_since timestamptz) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  twin text;
BEGIN
  IF pg_advisory_xact_lock(hashtextextended('carrier-event:' || p_carrier || ':' || p_key, 0)) IS NULL THEN NULL; END IF;
  IF p_nonce IS NOT NULL AND pg_advisory_xact_lock(hashtextextended('carrier-event-nonce:' || p_carrier || ':' || p_nonce, 0)) IS NULL THEN NULL; END IF;
  SELECT id INTO twin FROM carrier_events
   WHERE carrier = p_carrier AND carrier_event_id = p_key AND created_at >= coalesce(p_since, '-infinity')
   LIMIT 1;
  IF twin IS NULL AND p_nonce IS NOT NULL THEN
    SELECT id INTO twin FROM carrier_events
     WHERE carrier = p_carrier AND signature_nonce = p_nonce AND created_at >= coalesce(p_since, '-infinity')
     LIMIT 1;
  END IF;
  RETURN twin;
END $$;
