-- Voice in any carrier order (module calls).
--
-- A carrier event that arrives for a leg that is no longer live (ended, written off, not the
-- plan's current try, or a second physical leg of one try) is recorded on the timeline as
-- `stale`: it did nothing but hang that leg up.
ALTER TABLE call_timeline DROP CONSTRAINT call_timeline_outcome_check;
ALTER TABLE call_timeline ADD CONSTRAINT call_timeline_outcome_check
  CHECK (outcome IN ('applied', 'duplicate', 'superseded', 'ignored', 'stale'));

-- Every call-control command we send, by its command_id: when it was first sent and how often.
-- The carrier honours a repeated command_id only for a while (Telnyx: 60 s); a resend after that
-- could create a second physical leg, so the sender reads this row (in the statement that also
-- checks the call is still live) before it sends again, and never resends past the window.
CREATE TABLE call_command_sends (
  command_id     text PRIMARY KEY,
  call_id        text REFERENCES calls(id),
  first_sent_at  timestamptz NOT NULL DEFAULT now(),
  sends          integer NOT NULL DEFAULT 1 CHECK (sends >= 1)
);
CREATE INDEX call_command_sends_call_idx ON call_command_sends (call_id);
