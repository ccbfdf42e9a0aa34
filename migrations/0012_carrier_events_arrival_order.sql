-- Events of one call are handled in arrival order: a worker that finds an earlier event of the
-- same call session not tried yet lets it go first (carrier-event-processor). This is the order
-- ingest stored them in (created_at, id), never the carrier's clock. order_waits counts those
-- turns given away (each one is its own outbox job, named by it); attempts counts handler runs.
ALTER TABLE carrier_events ADD COLUMN order_waits integer NOT NULL DEFAULT 0;

CREATE INDEX carrier_events_session_pending_idx ON carrier_events ((normalized->>'callSessionId'), created_at, id)
  WHERE processed_at IS NULL AND normalized ? 'callSessionId';
