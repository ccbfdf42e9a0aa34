-- Carrier ingest: every verified carrier webhook, stored once, then processed by a worker.

CREATE TABLE carrier_events (
  id                text PRIMARY KEY,                  -- cev_...
  carrier           text NOT NULL,
  -- The carrier's id for the event (Telnyx data.id; Twilio idempotency token or Sid:Status):
  -- the dedupe key. Never the body or the signature, which change on every retry.
  carrier_event_id  text NOT NULL,
  event_type        text NOT NULL,                     -- the carrier's own word, for humans
  kind              text NOT NULL,                     -- our normalized kind (message.status, ...)
  payload           jsonb NOT NULL,                    -- the carrier's body as received
  normalized        jsonb NOT NULL,                    -- the NormalizedEvent: workers never re-parse carrier vocabulary
  signature_nonce   text,                              -- for carriers that sign with a nonce
  processed_at      timestamptz,
  note              text,                              -- why a processed event did nothing (ignored, no handler)
  error             text,                              -- set when processing failed for good; processed_at stays NULL
  attempts          integer NOT NULL DEFAULT 0,
  created_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (carrier, carrier_event_id)
);

-- A replayed signed delivery collides here even if a carrier reused an event id differently.
CREATE UNIQUE INDEX carrier_events_nonce_idx ON carrier_events (carrier, signature_nonce)
  WHERE signature_nonce IS NOT NULL;

-- carrier-events:list --failed and replay --all-failed.
CREATE INDEX carrier_events_failed_idx ON carrier_events (created_at)
  WHERE processed_at IS NULL AND error IS NOT NULL;
