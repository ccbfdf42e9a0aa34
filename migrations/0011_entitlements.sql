-- Entitlements: prepaid bundles (SMS segments, call minutes) granted by paid invoices, once per
-- (account, invoice, type) however often and under whatever event id the billing provider says so.

-- Who pays for an account at the billing provider (Stripe: cus_...). One account per customer.
ALTER TABLE accounts ADD COLUMN billing_customer_id text UNIQUE;

-- What a price grants: the provider's price lookup_key → an entitlement type and a quantity per unit.
-- A plan's type never changes (plans:upsert refuses): re-mapping a key would let an old invoice
-- grant a second bundle of another type.
CREATE TABLE plans (
  lookup_key  text PRIMARY KEY,
  type        text NOT NULL CHECK (type IN ('sms_segments', 'call_minutes')),
  quantity    bigint NOT NULL CHECK (quantity > 0),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Every verified billing-provider event, raw, once (the record; a redelivery adds nothing). Which
-- delivery is "the same grant" is not decided here but by the entitlement's business key.
CREATE TABLE billing_events (
  provider           text NOT NULL,                    -- 'stripe'
  provider_event_id  text NOT NULL,                    -- Stripe evt_...
  event_type         text NOT NULL,                    -- the provider's own word (invoice.paid, ...)
  payload            jsonb NOT NULL,
  received_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, provider_event_id)
);

-- One grant per (account, invoice, type): the unique key is the guard, the fingerprint (type,
-- quantity, period) tells a replay from a disagreeing payload. Never updated: balances are
-- computed from these rows and the usage ledger.
CREATE TABLE entitlements (
  id                 text PRIMARY KEY,                 -- ent_...
  account_id         text NOT NULL REFERENCES accounts(id),
  invoice_id         text NOT NULL,
  type               text NOT NULL CHECK (type IN ('sms_segments', 'call_minutes')),
  quantity           bigint NOT NULL CHECK (quantity > 0),
  period_start       timestamptz NOT NULL,
  period_end         timestamptz NOT NULL,
  fingerprint        text NOT NULL,
  -- the delivery that granted it
  provider           text NOT NULL,
  provider_event_id  text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, invoice_id, type)
);
CREATE INDEX entitlements_account_idx ON entitlements (account_id, id DESC);

-- What each delivery did, per entitlement it asked for (or a note when it asked for nothing we
-- grant): applied (committed with the entitlement), already_applied, conflicting_payload
-- (recorded after the grant rolled back: nothing changed), ignored.
CREATE TABLE entitlement_outcomes (
  id                 bigserial PRIMARY KEY,
  provider           text NOT NULL,
  provider_event_id  text NOT NULL,
  account_id         text REFERENCES accounts(id),
  invoice_id         text,
  type               text,
  entitlement_id     text REFERENCES entitlements(id),
  outcome            text NOT NULL CHECK (outcome IN ('applied', 'already_applied', 'conflicting_payload', 'ignored')),
  -- the grant this delivery asked for (type, quantity, period, fingerprint), when it asked for one
  offered            jsonb,
  note               text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (provider, provider_event_id) REFERENCES billing_events (provider, provider_event_id)
);
-- A second guard: an entitlement is applied by exactly one delivery.
CREATE UNIQUE INDEX entitlement_outcomes_applied_idx ON entitlement_outcomes (entitlement_id) WHERE outcome = 'applied';
CREATE INDEX entitlement_outcomes_event_idx ON entitlement_outcomes (provider, provider_event_id);
CREATE INDEX entitlement_outcomes_invoice_idx ON entitlement_outcomes (account_id, invoice_id);
