-- Every charge explains itself (issue #46): each usage row carries its cause, written by the very
-- INSERT that writes the row (UsageLedger.recordFromCte), so a row without one cannot exist and no
-- second write path can disagree with it. A column rather than a usage_causes table: the cause is
-- one document per row, never updated, always read with the row; a table would need a second
-- INSERT in each statement, a join on every read, and a constraint to say "exactly one".
--
-- The document (docs/billing.md, UsageCause in the API):
--   resource           {type: message | call | number, id}
--   transition         the guarded move that made the usage billable ("sending → sent", "→ received",
--                      "in_progress → completed", "rental")
--   settled_by         outbound SMS only: send_answer | found_by_lookup | answered_late |
--                      found_by_receipt | receipt_before_answer (message_status_history.detail's words)
--   carrier            the carrier, and carrier_resource_id its id of the message or call
--   carrier_events     [{id: cev_…, carrier_event_id, role, occurred_at}]: the stored carrier events
--                      whose guarded transition wrote the row (none for a send answer, a lookup or a rental)
--   price_rule         {unit, unit_price_micros, quantity, ...how the quantity was counted}
--   legacy             true: recorded before causes were kept (below)
ALTER TABLE usage_records ADD COLUMN cause jsonb;

-- Rows recorded before this migration: what can be derived from the resource is backfilled
-- (segments and encoding of the message, how an outbound send was settled from its `sent` history
-- row, the call's answered/ended times and duration, the rental month); which carrier event won
-- cannot be told after the fact, so carrier_events is empty and legacy is true.
UPDATE usage_records u SET cause = (SELECT jsonb_build_object(
    'resource', jsonb_build_object('type', 'message', 'id', u.resource_id),
    'transition', CASE WHEN u.kind = 'sms_outbound_segments' THEN 'sending → sent' ELSE '→ received' END,
    'settled_by', CASE WHEN u.kind = 'sms_outbound_segments' THEN coalesce(
        (SELECT h.detail FROM message_status_history h WHERE h.message_id = u.resource_id AND h.status = 'sent' ORDER BY h.id LIMIT 1), 'send_answer') END,
    'carrier', m.carrier, 'carrier_resource_id', m.carrier_message_id,
    'carrier_events', '[]'::jsonb,
    'price_rule', jsonb_build_object('unit', 'segment', 'unit_price_micros', u.unit_price_micros, 'quantity', u.quantity,
                                     'segments', coalesce(m.segments, u.quantity), 'encoding', m.encoding),
    'legacy', true)
  FROM (VALUES (1)) one LEFT JOIN messages m ON m.id = u.resource_id)
 WHERE u.kind IN ('sms_outbound_segments', 'sms_inbound_segments');

UPDATE usage_records u SET cause = (SELECT jsonb_build_object(
    'resource', jsonb_build_object('type', 'call', 'id', u.resource_id),
    'transition', coalesce(c.status, 'completed'),
    'settled_by', NULL, 'carrier', c.carrier, 'carrier_resource_id', c.carrier_call_id,
    'carrier_events', '[]'::jsonb,
    'price_rule', jsonb_build_object('unit', 'minute', 'unit_price_micros', u.unit_price_micros, 'quantity', u.quantity,
                                     'answered_at', to_char(c.answered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                     'ended_at', to_char(c.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                     'duration_seconds', c.duration_seconds, 'duration_source', NULL,
                                     'counted', 'ceil(duration_seconds / 60), at least 1'),
    'legacy', true)
  FROM (VALUES (1)) one LEFT JOIN calls c ON c.id = u.resource_id)
 WHERE u.kind = 'call_minutes';

UPDATE usage_records u SET cause = jsonb_build_object(
    'resource', jsonb_build_object('type', 'number', 'id', split_part(u.resource_id, ':', 1)),
    'transition', 'rental', 'settled_by', NULL, 'carrier', NULL, 'carrier_resource_id', NULL,
    'carrier_events', '[]'::jsonb,
    'price_rule', jsonb_build_object('unit', 'number_month', 'unit_price_micros', u.unit_price_micros, 'quantity', u.quantity,
                                     'month', split_part(u.resource_id, ':', 2),
                                     'counted', 'one per number per calendar month (UTC) it was held in, not prorated'),
    'legacy', true)
 WHERE u.kind = 'number_months';

-- Anything else (none is known): legacy, the row's own figures only.
UPDATE usage_records SET cause = jsonb_build_object(
    'resource', jsonb_build_object('type', 'unknown', 'id', resource_id), 'transition', NULL, 'settled_by', NULL,
    'carrier', NULL, 'carrier_resource_id', NULL, 'carrier_events', '[]'::jsonb,
    'price_rule', jsonb_build_object('unit', kind, 'unit_price_micros', unit_price_micros, 'quantity', quantity), 'legacy', true)
 WHERE cause IS NULL;

ALTER TABLE usage_records ALTER COLUMN cause SET NOT NULL;
-- The shape the ledger promises; price_rule repeats the row's own quantity and unit price.
ALTER TABLE usage_records ADD CONSTRAINT usage_records_cause_check CHECK (
  jsonb_typeof(cause) = 'object' AND jsonb_typeof(cause -> 'resource') = 'object'
  AND jsonb_typeof(cause -> 'carrier_events') = 'array' AND jsonb_typeof(cause -> 'legacy') = 'boolean'
  AND (cause -> 'price_rule' ->> 'quantity')::bigint = quantity
  AND (cause -> 'price_rule' ->> 'unit_price_micros')::bigint = unit_price_micros);
