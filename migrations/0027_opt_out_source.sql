-- Opt-outs the carrier reports (issue #42): a send refused or failed because the handset texted
-- STOP to the carrier itself (Twilio 21610, Telnyx 40300, Vonage Messages 1240) is recorded as an
-- opt-out like a keyword's, in the transaction that fails the message.

-- source: what changed the consent last: 'keyword' (changed_by is the inbound message carrying
-- it) or 'carrier' (changed_by is the outbound message the carrier refused or failed so).
ALTER TABLE message_opt_outs ADD COLUMN source text NOT NULL DEFAULT 'keyword' CHECK (source IN ('keyword', 'carrier'));
