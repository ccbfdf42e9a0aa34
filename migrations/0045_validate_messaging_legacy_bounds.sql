-- Issue 44, phase 2, step 2 of 4: scans each table once to prove the bound 0044 added (one call of
-- onceline_id_key per row). VALIDATE CONSTRAINT takes SHARE UPDATE EXCLUSIVE: inserts, updates and
-- reads go on during the scan (docs/retention.md, *Migrating messages and webhooks*). A row whose
-- id is not one of ours and decodes past the bound (none is written by the app) stops the
-- migration here, before anything changed: give it a proper id, or delete it, and migrate again.
ALTER TABLE messages VALIDATE CONSTRAINT messages_legacy_bound;
ALTER TABLE message_status_history VALIDATE CONSTRAINT message_status_history_legacy_bound;
ALTER TABLE outbound_events VALIDATE CONSTRAINT outbound_events_legacy_bound;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_legacy_bound;
ALTER TABLE webhook_delivery_attempts VALIDATE CONSTRAINT webhook_delivery_attempts_legacy_bound;
