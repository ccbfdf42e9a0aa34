-- Issue 25: an account's billing customer is linked by an operator only (accounts:create
-- --billing-customer, accounts:link-billing), never through the API. Each relink leaves a row
-- here, written by the same statement that changes the link: who, when, from what to what.
CREATE TABLE billing_link_audit (
  id                    bigserial PRIMARY KEY,
  account_id            text NOT NULL REFERENCES accounts (id),
  previous_customer_id  text,                         -- NULL: the account had no link
  customer_id           text,                         -- NULL: unlinked
  changed_by            text NOT NULL,                -- the operator (--by, else the OS user running the CLI)
  changed_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX billing_link_audit_account_idx ON billing_link_audit (account_id, id);
