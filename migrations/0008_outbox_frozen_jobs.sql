-- Issue 10, outbox and idempotency. An Idempotency-Key is claimed by ONE statement
-- (INSERT ... ON CONFLICT DO UPDATE, which waits for an uncommitted twin and locks the key's row):
-- the transaction that inserted the key writes its id here, so the statement's RETURNING tells
-- "this request owns the key" from "it met a stored one" without a second, newer read.
-- Keys stored before this have NULL: never the current transaction's, so they replay as before.
ALTER TABLE idempotency_keys ADD COLUMN claimed_by xid8;
