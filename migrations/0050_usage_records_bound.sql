-- Issue 44 phase 2, usage_records (the billing ledger), step 1 of 3 (each migration is its own
-- transaction), as 0040 did for carrier_events and outbox_jobs: usage_records' future bound as a
-- CHECK added NOT VALID (ACCESS EXCLUSIVE for an instant, no scan), its row of
-- partitioned_tables, and usage_exports, the record of the exports retention waits for.

-- A new partition gets the parent's CHECK constraints too (INCLUDING CONSTRAINTS): ATTACH refuses
-- a table missing one of them ("child table is missing constraint"), and usage_records (unlike
-- carrier_events and outbox_jobs, whose parents declare none) keeps its checks on the parent: the
-- ledger's kinds, whole non-negative quantities, amount = quantity x price, the cause's shape.
-- The one change to onceline_add_partition (0042), made to its definition as it stands.
DO $$
DECLARE
  fn constant regprocedure := 'onceline_add_partition(text, timestamptz, timestamptz)';
BEGIN
  EXECUTE replace(pg_get_functiondef(fn), 'LIKE %I INCLUDING DEFAULTS)', 'LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)');
  IF position('INCLUDING CONSTRAINTS' IN pg_get_functiondef(fn)) = 0 THEN RAISE EXCEPTION 'onceline_add_partition: LIKE ... INCLUDING DEFAULTS not found'; END IF;
END $$;

-- Each partition's own unique indexes: the id, and the ledger's key (kind, resource_id), "a
-- resource is billed once per kind" (held across partitions by usage_record_twin, 0052). No index
-- of unfinished rows: a ledger row owes no work; what holds a usage partition is its export.
INSERT INTO partitioned_tables (parent, legacy_until, local_indexes)
VALUES ('usage_records', date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days', ARRAY[
  'CREATE UNIQUE INDEX ON %I (id)',
  'CREATE UNIQUE INDEX ON %I (kind, resource_id)'
]);

DO $$
BEGIN
  EXECUTE format('ALTER TABLE usage_records ADD CONSTRAINT usage_records_legacy_bound CHECK (created_at < %L) NOT VALID',
                 (SELECT legacy_until FROM partitioned_tables WHERE parent = 'usage_records'));
END $$;

-- One row per `onceline usage:export` (src/modules/billing/usage-export.ts): the ledger rows with
-- created_at in [period_from, period_to), all accounts, written to `file` as JSON Lines; row_count
-- lines, sha256 the file's digest. Retention drops a usage partition only when exports whose
-- row_count still matches the ledger cover its whole period (usage_partition_exported, 0052).
CREATE TABLE usage_exports (
  id           bigserial PRIMARY KEY,
  period_from  timestamptz NOT NULL,
  period_to    timestamptz NOT NULL CHECK (period_to > period_from),
  row_count    bigint NOT NULL CHECK (row_count >= 0),
  sha256       text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  format       text NOT NULL CHECK (format = 'jsonl'),
  file         text NOT NULL,
  exported_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_exports_period_idx ON usage_exports (period_from, period_to);
