-- Issue 44 phase 2, usage_records step 2 of 3: scans usage_records once to prove the bound 0050
-- added. VALIDATE CONSTRAINT takes SHARE UPDATE EXCLUSIVE: inserts, updates and reads go on
-- during the scan (docs/retention.md, *Phase 2*: about the time of a sequential read of the table).
ALTER TABLE usage_records VALIDATE CONSTRAINT usage_records_legacy_bound;
