-- Foundation: accounts, API keys and the transactional outbox.

CREATE TABLE accounts (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Keys are stored as SHA-256 only; the visible prefix helps a human recognise a key.
CREATE TABLE api_keys (
  id          text PRIMARY KEY,
  account_id  text NOT NULL REFERENCES accounts(id),
  key_hash    bytea NOT NULL UNIQUE,
  prefix      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id);

-- One row per job a committed transaction earned. Redis only carries job_id; the row is the
-- source of truth: completed_at is set in the same transaction as a transactional handler's work.
CREATE TABLE outbox_jobs (
  id            bigserial PRIMARY KEY,
  job_id        text NOT NULL UNIQUE,
  queue         text NOT NULL,
  name          text NOT NULL,
  data          jsonb NOT NULL,
  run_at        timestamptz NOT NULL DEFAULT now(),
  created_at    timestamptz NOT NULL DEFAULT now(),
  relayed_at    timestamptz,
  -- when recovery next checks that Redis still has this job (relayed, unfinished rows only)
  redrive_at    timestamptz,
  redrives      integer NOT NULL DEFAULT 0,
  attempts      integer NOT NULL DEFAULT 0,
  completed_at  timestamptz,
  failed_at     timestamptz,
  last_error    text
);
-- The relay's claim: due rows not yet handed to Redis.
CREATE INDEX outbox_jobs_unrelayed_idx ON outbox_jobs (run_at) WHERE relayed_at IS NULL;
-- Recovery: relayed rows with no outcome in Postgres yet.
CREATE INDEX outbox_jobs_unfinished_idx ON outbox_jobs (redrive_at)
  WHERE relayed_at IS NOT NULL AND completed_at IS NULL AND failed_at IS NULL;
-- Retention.
CREATE INDEX outbox_jobs_finished_idx ON outbox_jobs (coalesce(completed_at, failed_at))
  WHERE completed_at IS NOT NULL OR failed_at IS NOT NULL;

-- Diagnostics: every run of the probe job leaves one row, so a job run twice would show.
CREATE TABLE probe_runs (
  id        bigserial PRIMARY KEY,
  job_id    text NOT NULL,
  label     text,
  ran_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX probe_runs_job_idx ON probe_runs (job_id);
