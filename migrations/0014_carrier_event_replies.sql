-- Carriers that ask us what to do during a call (Twilio Voice) get the answer in the response to
-- that very request. The event and its answer are decided in one transaction and stored on the
-- event's row: a repeated callback (same dedupe key) is answered with this text, never re-decided.
ALTER TABLE carrier_events ADD COLUMN reply text;
