-- Carrier events whose kind no module handles yet (call.* before Calls ship): kept unconsumed,
-- processed_at NULL and no error, so carrier-events:replay can run them once a handler exists.

-- Set when processing found no handler for the event's kind; cleared by the statement in which a
-- handler's run is recorded (processed, failed or retrying).
ALTER TABLE carrier_events ADD COLUMN unhandled_since timestamptz;

-- carrier-events:list --unhandled and replay --all-unhandled.
CREATE INDEX carrier_events_unhandled_idx ON carrier_events (created_at)
  WHERE processed_at IS NULL AND unhandled_since IS NOT NULL;
