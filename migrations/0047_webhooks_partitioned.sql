-- Issue 44, phase 2, step 4 of 4: outbound_events (customer events) PARTITION BY RANGE
-- (onceline_id_key(id)), webhook_deliveries BY RANGE (onceline_id_key(event_id)) and
-- webhook_delivery_attempts BY RANGE (onceline_id_key(delivery_id)): an event, its deliveries
-- (even one made later, by a redeliver to an endpoint subscribed since) and their attempts are in
-- partitions of the event's period (attempts: their delivery's), and age out together
-- (src/modules/webhooks/webhooks-retention.ts). The same steps as 0046 (docs/retention.md).
--
-- UNIQUE (event_id, endpoint_id) contains the partition key's column: both copies of a delivery
-- land in the event's partition, whose own unique index makes them one (a fan-out racing a
-- redeliver across a boundary included), so it needs no guard function. Likewise attempts'
-- (delivery_id, attempt).
--
-- The foreign keys webhook_deliveries.event_id → outbound_events.id and
-- webhook_delivery_attempts.delivery_id → webhook_deliveries.id go, for the reasons 0046 gives
-- (an expression key cannot be in a parent's unique constraint; retention would have to drop in
-- order). What replaces them: deliveries are made only from the events of the statement that
-- writes them (DeliveryScheduler.createForEventsCte) or of an event read by id (redeliver);
-- attempts only by the statement that claims their delivery (attempt-records.ts); and an event's
-- partition is kept while its partition of deliveries owes one (retention's predicate).
-- The foreign keys to accounts and webhook_endpoints (not partitioned) stay.

ALTER TABLE webhook_delivery_attempts DROP CONSTRAINT webhook_delivery_attempts_delivery_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;

-- Each old table renamed <table>_legacy and its partitioned parent made (onceline_partitioned_by_id,
-- 0046); the parents' foreign keys and indexes declared before the old tables are attached.
SELECT onceline_partitioned_by_id('outbound_events', 'id');
ALTER TABLE outbound_events ADD CONSTRAINT outbound_events_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);
CREATE INDEX outbound_events_account_idx ON outbound_events (account_id, id DESC);
CREATE INDEX outbound_events_account_type_idx ON outbound_events (account_id, type, id DESC);

SELECT onceline_partitioned_by_id('webhook_deliveries', 'event_id');
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts(id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, status, created_at DESC);
CREATE INDEX webhook_deliveries_parked_idx ON webhook_deliveries (endpoint_id, parked_at) WHERE status = 'parked';
CREATE INDEX webhook_deliveries_parked_at_idx ON webhook_deliveries (parked_at) WHERE status = 'parked';

SELECT onceline_partitioned_by_id('webhook_delivery_attempts', 'delivery_id');

SELECT onceline_partition_legacy('outbound_events');
SELECT onceline_partition_legacy('webhook_deliveries');
SELECT onceline_partition_legacy('webhook_delivery_attempts');
