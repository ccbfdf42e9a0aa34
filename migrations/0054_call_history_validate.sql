-- Issue 44 phase 2, the call history, step 2 of 3: scans each table once to prove the bound 0053
-- added. VALIDATE CONSTRAINT takes SHARE UPDATE EXCLUSIVE: inserts, updates and reads go on
-- during each scan (docs/retention.md, *Phase 2*).
ALTER TABLE calls VALIDATE CONSTRAINT calls_legacy_bound;
ALTER TABLE call_legs VALIDATE CONSTRAINT call_legs_legacy_bound;
ALTER TABLE call_timeline VALIDATE CONSTRAINT call_timeline_legacy_bound;
ALTER TABLE call_transcript_fragments VALIDATE CONSTRAINT call_transcript_fragments_legacy_bound;
ALTER TABLE call_command_sends VALIDATE CONSTRAINT call_command_sends_legacy_bound;
