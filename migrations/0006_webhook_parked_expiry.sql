-- The housekeeping sweep fails deliveries parked past WEBHOOK_PARKED_RETENTION_DAYS for every
-- endpoint at once (WHERE status = 'parked' AND parked_at <= ...): this index lets it read only
-- the expired ones, not every parked delivery of every disabled endpoint, each time it runs.
CREATE INDEX webhook_deliveries_parked_at_idx ON webhook_deliveries (parked_at) WHERE status = 'parked';
