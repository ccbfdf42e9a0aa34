-- Dispatch leases: a run claims an outbound message for one carrier call under a fresh token
-- until claimed_until. A message still `sending` is claimed again only once its lease has ended
-- (the run holding it died or stalled), and only the run holding the current token records the
-- carrier's answer. NULL (rows from before this migration, or a lease given back) is no lease.
ALTER TABLE messages
  ADD COLUMN claim_token    text,
  ADD COLUMN claimed_until  timestamptz;
