-- A release the carrier has not confirmed is never counted released. When an attempt fails (the
-- carrier's documented lookup finds no such number of ours, the carrier refuses, or it does not
-- answer) the number stays `releasing`, and its failed attempts and last error are kept here:
-- shown by `verify` (numbers.release_failing), retried by the release job's backoff and by the
-- operator's `numbers:release-retry`. A release that succeeds clears the error.
ALTER TABLE phone_numbers
  ADD COLUMN release_attempts integer NOT NULL DEFAULT 0 CHECK (release_attempts >= 0),
  ADD COLUMN release_error text CHECK (length(release_error) <= 1000);
