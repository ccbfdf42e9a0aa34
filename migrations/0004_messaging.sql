-- Messaging: phone numbers, messages with their status history, Idempotency-Key outcomes,
-- and the usage ledger (Billing).

CREATE TABLE phone_numbers (
  id            text PRIMARY KEY,
  account_id    text NOT NULL REFERENCES accounts(id),
  phone_number  text NOT NULL UNIQUE,             -- a number belongs to one account
  carrier       text NOT NULL CHECK (carrier IN ('telnyx', 'twilio')),
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX phone_numbers_account_idx ON phone_numbers (account_id, id DESC);

CREATE TABLE messages (
  id                  text PRIMARY KEY,
  account_id          text NOT NULL REFERENCES accounts(id),
  direction           text NOT NULL CHECK (direction IN ('outbound', 'inbound')),
  from_number         text NOT NULL,
  to_number           text NOT NULL,
  text                text NOT NULL,
  status              text NOT NULL CHECK (status IN ('queued', 'scheduled', 'sending', 'sent', 'delivered', 'failed', 'received')),
  segments            integer NOT NULL CHECK (segments > 0),
  encoding            text NOT NULL CHECK (encoding IN ('GSM-7', 'UCS-2')),
  carrier             text NOT NULL CHECK (carrier IN ('telnyx', 'twilio')),
  carrier_message_id  text,
  error_code          text,
  error_detail        text,
  send_at             timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  -- an inbound message is inserted once per carrier message, however often it is delivered
  UNIQUE (carrier, carrier_message_id)
);
CREATE INDEX messages_account_idx ON messages (account_id, id DESC);

CREATE TABLE message_status_history (
  id          bigserial PRIMARY KEY,
  message_id  text NOT NULL REFERENCES messages(id),
  status      text NOT NULL,
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX message_status_history_message_idx ON message_status_history (message_id, id);

-- The committed outcome of a request made with an Idempotency-Key. Inserted in the same
-- transaction as the message it created, so a concurrent twin waits on this key's index entry.
CREATE TABLE idempotency_keys (
  account_id       text NOT NULL REFERENCES accounts(id),
  key              text NOT NULL,
  fingerprint      text NOT NULL,
  response_status  integer,
  response_body    jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- One row per billable fact; UNIQUE(kind, resource_id) is a second guard behind the transition's.
CREATE TABLE usage_records (
  id                 text PRIMARY KEY,
  account_id         text NOT NULL REFERENCES accounts(id),
  kind               text NOT NULL CHECK (kind IN ('sms_outbound_segments', 'sms_inbound_segments', 'call_minutes')),
  resource_id        text NOT NULL,
  quantity           bigint NOT NULL CHECK (quantity >= 0),
  unit_price_micros  bigint NOT NULL CHECK (unit_price_micros >= 0),
  amount_micros      bigint NOT NULL CHECK (amount_micros = quantity * unit_price_micros),
  created_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (kind, resource_id)
);
CREATE INDEX usage_records_account_idx ON usage_records (account_id, created_at);
