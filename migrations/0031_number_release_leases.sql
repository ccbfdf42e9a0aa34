-- A number is released at its carrier by one run at a time (issue #41): the release job's own
-- retry (backoff) and the operator's `numbers:release-retry` job may both be due, and each would
-- look the number up and call the carrier's release. A run first claims the number for one
-- carrier call by one guarded UPDATE (still releasing, no live lease) that writes a fresh
-- release_token and release_leased_until; only the run holding the claim calls the carrier, and
-- its outcome (released, or a failed attempt) is recorded only under that token. A run that finds
-- a live lease calls nothing and is due again at the lease's end (an outbox row), so a holder that
-- died is followed up. NULL release_leased_until (rows from before, or a lease given back after a
-- failed attempt) is no lease.
ALTER TABLE phone_numbers
  ADD COLUMN release_token        text,
  ADD COLUMN release_leased_until timestamptz;
