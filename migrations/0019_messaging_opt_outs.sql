-- Opt-outs: STOP / START keywords on inbound SMS (issue #30).

-- Per account: whether a keyword counts for the number it was sent to ('number') or for every
-- number of the account ('account'), and its own replies to keywords: {"opt_out"|"opt_in"|"help":
-- {"text", "segments", "encoding"}}, counted when set; a keyword without one gets the default text.
ALTER TABLE accounts
  ADD COLUMN opt_out_scope text NOT NULL DEFAULT 'number' CHECK (opt_out_scope IN ('number', 'account')),
  ADD COLUMN keyword_replies jsonb NOT NULL DEFAULT '{}';

-- A handset's consent for one of our numbers (our_number '*': every number of the account).
-- Written by the statement that records the inbound message carrying the keyword; a row changes
-- only when the consent does, so a repeated STOP changes (and announces) nothing.
CREATE TABLE message_opt_outs (
  account_id  text NOT NULL REFERENCES accounts(id),
  our_number  text NOT NULL,
  handset     text NOT NULL,
  opted_out   boolean NOT NULL,
  changed_by  text NOT NULL,                              -- the inbound message that carried the keyword
  changed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (account_id, handset, our_number)
);

-- The reply to a keyword (sent even to an opted-out handset: the confirmation of its STOP).
ALTER TABLE messages ADD COLUMN auto_reply text CHECK (auto_reply IN ('opt_out', 'opt_in', 'help'));

-- 'cancelled': a scheduled send taken back before its dispatch.
ALTER TABLE messages DROP CONSTRAINT messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check
  CHECK (status IN ('queued', 'scheduled', 'sending', 'sent', 'delivered', 'failed', 'received', 'cancelled'));
