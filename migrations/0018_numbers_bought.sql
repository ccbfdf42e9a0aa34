-- Numbers bought through the carrier (module numbers).
--
-- A number's life: ordering (its order is at the carrier) → active (the account's; it routes) →
-- releasing (stops routing at once; released at the carrier once no call is in progress) →
-- released; or ordering → failed. Only ordering/active/releasing hold the number: the partial
-- unique index below decides between two accounts ordering (or an operator assigning) the same
-- number at once; a released or failed row is history and lets the number be bought again.
ALTER TABLE phone_numbers
  ADD COLUMN status text NOT NULL DEFAULT 'active' CHECK (status IN ('ordering', 'active', 'releasing', 'released', 'failed')),
  ADD COLUMN order_id text,
  ADD COLUMN carrier_number_id text CHECK (length(carrier_number_id) <= 255),
  ADD COLUMN country text CHECK (country ~ '^[A-Z]{2}$'),
  ADD COLUMN monthly_price_micros bigint CHECK (monthly_price_micros >= 0),
  ADD COLUMN activated_at timestamptz,
  ADD COLUMN released_at timestamptz;
UPDATE phone_numbers SET activated_at = created_at;
ALTER TABLE phone_numbers DROP CONSTRAINT phone_numbers_phone_number_key;
CREATE UNIQUE INDEX phone_numbers_held_idx ON phone_numbers (phone_number) WHERE status IN ('ordering', 'active', 'releasing');
CREATE INDEX phone_numbers_order_idx ON phone_numbers (order_id) WHERE order_id IS NOT NULL;

-- One order of one or more numbers from one carrier. pending → success | failed exactly once
-- (a guarded UPDATE ... WHERE status = 'pending'); Telnyx completes it asynchronously.
CREATE TABLE number_orders (
  id                text PRIMARY KEY,
  account_id        text NOT NULL REFERENCES accounts(id),
  carrier           text NOT NULL CHECK (carrier IN ('telnyx', 'twilio', 'vonage')),
  status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'success', 'failed')),
  carrier_order_id  text CHECK (length(carrier_order_id) <= 255),
  country           text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
  -- The lease of the run calling the carrier: no other run calls it until this time.
  placing_until     timestamptz,
  error             text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  completed_at      timestamptz
);
CREATE INDEX number_orders_account_idx ON number_orders (account_id, id DESC);
CREATE INDEX number_orders_carrier_order_idx ON number_orders (carrier, carrier_order_id) WHERE carrier_order_id IS NOT NULL;

-- Monthly rental: one usage row per (number, calendar month), resource_id = '<num id>:<YYYY-MM>',
-- under the existing UNIQUE (kind, resource_id).
ALTER TABLE usage_records DROP CONSTRAINT usage_records_kind_check;
ALTER TABLE usage_records ADD CONSTRAINT usage_records_kind_check
  CHECK (kind IN ('sms_outbound_segments', 'sms_inbound_segments', 'call_minutes', 'number_months'));
