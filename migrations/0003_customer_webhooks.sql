-- Customer webhooks: endpoints, the events we owe customers, and one delivery per (event, endpoint).

CREATE TABLE webhook_endpoints (
  id                          text PRIMARY KEY,                       -- we_...
  account_id                  text NOT NULL REFERENCES accounts(id),
  url                         text NOT NULL,
  event_types                 text[],                                 -- NULL: every type
  description                 text,
  secret                      text NOT NULL,                          -- whsec_<base64>
  -- After rotate_secret the old secret still signs (beside the new one) until this time.
  previous_secret             text,
  previous_secret_expires_at  timestamptz,
  enabled                     boolean NOT NULL DEFAULT true,
  disabled_reason             text,
  disabled_at                 timestamptz,
  -- Failed attempts since the last success; at WEBHOOK_DISABLE_AFTER_FAILURES the endpoint is disabled.
  consecutive_failures        integer NOT NULL DEFAULT 0,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  deleted_at                  timestamptz
);
CREATE INDEX webhook_endpoints_account_idx ON webhook_endpoints (account_id, id) WHERE deleted_at IS NULL;

-- One row per state transition a customer is told about. Its id is the webhook-id of every attempt.
CREATE TABLE outbound_events (
  id             text PRIMARY KEY,                                    -- evt_..., time-ordered
  account_id     text NOT NULL REFERENCES accounts(id),
  type           text NOT NULL,
  event_version  integer NOT NULL,
  payload        jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbound_events_account_idx ON outbound_events (account_id, id DESC);
CREATE INDEX outbound_events_account_type_idx ON outbound_events (account_id, type, id DESC);

CREATE TABLE webhook_deliveries (
  id                    text PRIMARY KEY,                             -- dlv_...
  event_id              text NOT NULL REFERENCES outbound_events(id),
  endpoint_id           text NOT NULL REFERENCES webhook_endpoints(id),
  account_id            text NOT NULL REFERENCES accounts(id),
  status                text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'parked')),
  -- Attempts made so far, over the delivery's whole life; attempt n's job is dlv-<id>-<round>-<n>.
  attempt_count         integer NOT NULL DEFAULT 0,
  -- A round is one walk through WEBHOOK_RETRY_SCHEDULE; resume (enable) and redeliver start a new
  -- one, so jobs of an older round find the guard closed and do nothing.
  round                 integer NOT NULL DEFAULT 1,
  round_first_attempt   integer NOT NULL DEFAULT 1,
  next_attempt_at       timestamptz,
  parked_at             timestamptz,
  delivered_at          timestamptz,
  failed_at             timestamptz,
  last_error            text,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, status, created_at DESC);
CREATE INDEX webhook_deliveries_parked_idx ON webhook_deliveries (endpoint_id, parked_at) WHERE status = 'parked';

-- Every attempt, kept: what the customer's server said (or why we did not call it).
CREATE TABLE webhook_delivery_attempts (
  delivery_id       text NOT NULL REFERENCES webhook_deliveries(id),
  attempt           integer NOT NULL,
  status_code       integer,
  error             text,
  duration_ms       integer NOT NULL,
  response_excerpt  text,
  at                timestamptz NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);
