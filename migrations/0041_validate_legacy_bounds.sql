-- Issue 44, step 2 of 3: scans carrier_events and outbox_jobs once each to prove the bounds 0040
-- added. VALIDATE CONSTRAINT takes SHARE UPDATE EXCLUSIVE: inserts, updates and reads go on
-- during the scan (docs/retention.md: about the time of a sequential read of the table).
ALTER TABLE carrier_events VALIDATE CONSTRAINT carrier_events_legacy_bound;
ALTER TABLE outbox_jobs VALIDATE CONSTRAINT outbox_jobs_legacy_bound;
