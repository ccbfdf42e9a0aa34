-- Vonage (Messages API) is a third carrier: numbers, messages and calls may name it.
ALTER TABLE phone_numbers DROP CONSTRAINT phone_numbers_carrier_check,
  ADD CONSTRAINT phone_numbers_carrier_check CHECK (carrier IN ('telnyx', 'twilio', 'vonage'));
ALTER TABLE messages DROP CONSTRAINT messages_carrier_check,
  ADD CONSTRAINT messages_carrier_check CHECK (carrier IN ('telnyx', 'twilio', 'vonage'));
ALTER TABLE calls DROP CONSTRAINT calls_carrier_check,
  ADD CONSTRAINT calls_carrier_check CHECK (carrier IN ('telnyx', 'twilio', 'vonage'));
