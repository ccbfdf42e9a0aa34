-- A delivery receipt applied to its message (status only forward), history, customer event, in one statement
-- Written in src/modules/messaging/messaging-carrier-events.ts (applyReceipt); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH evt_input AS (SELECT * FROM json_to_recordset($1::json) AS i(event_id text, job_id text, carrier text, carrier_message_id text, status text, carrier_status text, error_code text, error_detail text, opted_out boolean, our_message_id text, carrier_event_id text, occurred_at text)),
rcpt_found AS (SELECT i.event_id AS rcpt_event_id, m.id AS found_id, m.status AS previous, m.direction = 'outbound' AS outbound,
              m.status = 'sending' AND m.carrier_message_id IS NULL AS settles, i.carrier_message_id AS rcpt_carrier_id,
              CASE WHEN m.status = 'sending' AND m.carrier_message_id IS NULL THEN coalesce(i.status, 'sent') ELSE i.status END AS rcpt_status,
              CASE WHEN m.outcome_unknown_since IS NOT NULL THEN $2::text ELSE $3::text END AS settle_detail,
              i.error_code AS rcpt_error_code, i.error_detail AS rcpt_error_detail, i.opted_out AS rcpt_opted_out,
              i.carrier_event_id AS rcpt_carrier_event_id, i.occurred_at AS rcpt_occurred_at
         FROM evt_input i JOIN messages m ON m.carrier = i.carrier
              AND (m.id = i.our_message_id
                   OR (m.carrier_message_id = i.carrier_message_id
                       AND (i.our_message_id IS NULL OR NOT EXISTS (SELECT FROM messages r WHERE r.id = i.our_message_id AND r.carrier = i.carrier))))
        WHERE (i.status IS NOT NULL OR i.our_message_id IS NOT NULL)
          AND (m.id = ANY ($4::text[])
               OR (m.carrier = ANY ($5::text[])
                   AND m.carrier_message_id = ANY ($6::text[])))
        ORDER BY m.id FOR UPDATE OF m),
evt_ready AS (SELECT i.event_id, i.job_id FROM evt_input i WHERE (i.status IS NULL OR EXISTS (SELECT FROM rcpt_found f WHERE f.rcpt_event_id = i.event_id))),
job_locked AS (SELECT id FROM outbox_jobs WHERE job_id = ANY (ARRAY(SELECT job_id FROM evt_ready WHERE job_id = ANY ($7::text[]))) AND completed_at IS NULL AND failed_at IS NULL ORDER BY job_id FOR UPDATE),
job_claimed AS (UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, relayed_at = coalesce(relayed_at, now())
           WHERE id IN (SELECT id FROM job_locked) AND completed_at IS NULL AND failed_at IS NULL
           RETURNING job_id),
cev_consumed AS (UPDATE carrier_events c SET processed_at = now(), error = NULL, note = CASE WHEN NOT EXISTS (SELECT FROM rcpt_found f WHERE f.rcpt_event_id = i.event_id AND f.outbound AND f.rcpt_status IS NOT NULL AND f.previous <> ALL($9::text[]) AND f.previous <> f.rcpt_status)
              THEN CASE WHEN i.status IS NULL THEN 'carrier status ' || i.carrier_status || ' changes nothing'
                        ELSE 'duplicate or superseded receipt (' || i.carrier_status || ')' END END, attempts = c.attempts + 1, unhandled_since = NULL
             FROM evt_input i JOIN job_claimed j ON j.job_id = i.job_id
            WHERE c.id = ANY ($8::text[]) AND c.created_at BETWEEN (SELECT min(onceline_id_window_start(x)) FROM unnest($8::text[]) AS x) AND (SELECT max(onceline_id_window_end(x)) FROM unnest($8::text[]) AS x) AND c.id = i.event_id AND c.processed_at IS NULL
           RETURNING c.id AS consumed_event_id),
rcpt_moved AS (UPDATE messages m SET status = f.rcpt_status, error_code = coalesce(f.rcpt_error_code, m.error_code),
              error_detail = coalesce(f.rcpt_error_detail, m.error_detail), updated_at = now(),
              carrier_message_id = CASE WHEN f.settles THEN f.rcpt_carrier_id ELSE m.carrier_message_id END,
              claimed_until = CASE WHEN f.settles THEN NULL ELSE m.claimed_until END,
              outcome_unknown_since = CASE WHEN f.settles THEN NULL ELSE m.outcome_unknown_since END
         FROM rcpt_found f JOIN cev_consumed c ON c.consumed_event_id = f.rcpt_event_id
        WHERE m.id = f.found_id AND f.outbound AND f.rcpt_status IS NOT NULL AND f.previous <> ALL($10::text[]) AND f.previous <> f.rcpt_status
       RETURNING id, 'message' AS record_type, direction, from_number AS "from", to_number AS "to", text, status,
  segments, encoding, carrier, carrier_message_id, error_code, error_detail, send_at,
  CASE status WHEN 'scheduled' THEN coalesce(send_slot, send_at) WHEN 'queued' THEN coalesce(send_slot, (SELECT greatest(p.next_send_at, p.send_paused_until, now()) FROM phone_numbers p WHERE p.phone_number = from_number AND p.status IN ('ordering', 'active', 'releasing'))) END AS expected_send_at,
  created_at, updated_at, account_id, f.settles AS rcpt_settled, f.settle_detail AS rcpt_settle_detail, f.rcpt_opted_out,
                 f.rcpt_event_id, f.rcpt_carrier_event_id, f.rcpt_occurred_at),
rcpt_settled AS (SELECT id, record_type, direction, "from", "to", text, 'sent'::text AS status, segments, encoding, carrier, carrier_message_id,
              NULL::text AS error_code, NULL::text AS error_detail, send_at, expected_send_at, created_at, updated_at, account_id, rcpt_settle_detail,
              rcpt_settle_detail AS settled_by, rcpt_event_id AS cause_event_id, rcpt_carrier_event_id AS cause_carrier_event_id, rcpt_occurred_at AS cause_occurred_at
         FROM rcpt_moved WHERE rcpt_settled),
use_recorded AS (INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       SELECT onceline_id('use'), account_id, $14::text, id, segments, $13::bigint, segments::bigint * $13::bigint, jsonb_set(jsonb_build_object('resource', jsonb_build_object('type', $12::text, 'id', id),
    'transition', 'sending → sent', 'settled_by', settled_by, 'carrier', carrier,
    'carrier_resource_id', carrier_message_id, 'carrier_events', CASE WHEN cause_event_id IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('id', cause_event_id, 'carrier_event_id', cause_carrier_event_id, 'role', $11::text, 'occurred_at', cause_occurred_at)) END, 'price_rule', jsonb_build_object('unit', 'segment', 'segments', segments, 'encoding', encoding)), '{price_rule}', (jsonb_build_object('resource', jsonb_build_object('type', $12::text, 'id', id),
    'transition', 'sending → sent', 'settled_by', settled_by, 'carrier', carrier,
    'carrier_resource_id', carrier_message_id, 'carrier_events', CASE WHEN cause_event_id IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('id', cause_event_id, 'carrier_event_id', cause_carrier_event_id, 'role', $11::text, 'occurred_at', cause_occurred_at)) END, 'price_rule', jsonb_build_object('unit', 'segment', 'segments', segments, 'encoding', encoding)) -> 'price_rule') || jsonb_build_object('unit_price_micros', $13::bigint, 'quantity', segments::bigint))
                   || jsonb_build_object('legacy', false)
         FROM (SELECT * FROM rcpt_settled ORDER BY id) AS rcpt_settled
        WHERE usage_record_twin($14::text, id) IS NULL
       ON CONFLICT DO NOTHING RETURNING id),
msg_history AS (INSERT INTO message_status_history (message_id, status, detail)
       SELECT id, status, detail FROM (
         SELECT id, status, rcpt_settle_detail AS detail, 0 AS step FROM rcpt_settled
         UNION ALL SELECT id, status, NULL, 1 FROM rcpt_moved WHERE NOT (rcpt_settled AND status = 'sent')) h ORDER BY id, step),
msg_moves AS (SELECT s.*, 'message.sent' AS type FROM (SELECT id, record_type, direction, "from", "to", text, status, segments, encoding, carrier, carrier_message_id, error_code, error_detail,
  send_at, expected_send_at, created_at, updated_at, account_id FROM rcpt_settled) s
       UNION ALL SELECT f.*, 'message.' || f.status AS type FROM (SELECT id, record_type, direction, "from", "to", text, status, segments, encoding, carrier, carrier_message_id, error_code, error_detail,
  send_at, expected_send_at, created_at, updated_at, account_id FROM rcpt_moved WHERE NOT (rcpt_settled AND status = 'sent')) f),
evt_emitted AS (INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT onceline_id('evt'), account_id, type::text, $15::int, jsonb_build_object('id', id, 'record_type', record_type, 'direction', direction, 'from', "from", 'to', "to",
  'text', text, 'status', status, 'segments', segments, 'encoding', encoding, 'carrier', carrier,
  'carrier_message_id', carrier_message_id, 'error_code', error_code, 'error_detail', error_detail,
  'send_at', to_char(send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'expected_send_at', to_char(expected_send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) FROM msg_moves
       RETURNING id, account_id, type, payload, created_at),
dlv_endpoints AS (SELECT w.id AS endpoint_id, w.enabled, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, e.id AS event_id, e.account_id
         FROM evt_emitted e JOIN webhook_endpoints w ON w.account_id = e.account_id
        WHERE w.deleted_at IS NULL AND (w.event_types IS NULL OR e.type = ANY (w.event_types))
        ORDER BY w.id FOR SHARE OF w),
dlv_created AS (INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, parked_at, next_attempt_at)
       SELECT onceline_id('dlv'), event_id, endpoint_id, account_id,
              CASE WHEN enabled THEN 'pending' ELSE 'parked' END,
              CASE WHEN enabled THEN NULL ELSE now() END,
              CASE WHEN enabled THEN now() ELSE NULL END
         FROM dlv_endpoints
       ON CONFLICT DO NOTHING
       RETURNING id, status, round, attempt_count, round_first_attempt, endpoint_id, event_id),
dlv_first_attempts AS (SELECT id, event_id, 1 AS round, 1 AS attempt FROM dlv_created WHERE status = 'pending'),
dlv_jobs AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'dlv-' || id || '-' || round || '-' || attempt, 'webhooks', 'webhook-delivery-attempt', jsonb_build_object('deliveryId', id, 'eventId', event_id, 'round', round, 'attempt', attempt), now() + make_interval(secs => $16::int) FROM dlv_first_attempts
       ON CONFLICT DO NOTHING RETURNING job_id, name),
dlv_prefetched AS MATERIALIZED (SELECT 'dlv-' || id || '-' || round || '-' || attempt AS job_id, prefetched FROM (
             SELECT f.id, f.round, f.attempt,
                    jsonb_build_object('id', d.id, 'status', d.status, 'round', d.round, 'attempt_count', d.attempt_count,
            'round_first_attempt', d.round_first_attempt, 'endpoint_id', d.endpoint_id, 'url', w.url, 'enabled', w.enabled,
            'deleted', false, 'secrets', to_jsonb(array_remove(ARRAY[w.secret, CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END], NULL)), 'event_id', e.id, 'type', e.type, 'payload', e.payload,
            'event_created_at', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) || jsonb_build_object('job_round', f.round, 'job_attempt', f.attempt) AS prefetched
               FROM dlv_first_attempts f JOIN dlv_created d ON d.id = f.id
               JOIN dlv_endpoints w ON w.endpoint_id = d.endpoint_id AND w.event_id = d.event_id
               JOIN evt_emitted e ON e.id = d.event_id) AS first_attempt)
SELECT (SELECT coalesce(jsonb_agg(job_id), '[]'::jsonb) FROM job_claimed) AS claimed, (SELECT coalesce(jsonb_agg(i.job_id), '[]'::jsonb) FROM evt_input i WHERE NOT EXISTS (SELECT FROM evt_ready r WHERE r.event_id = i.event_id)) AS unready,
                  (0)::int AS jobs, (SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id, 'prefetched', p.prefetched)), '[]'::jsonb)
               FROM (SELECT name, job_id, NULL::jsonb AS payload FROM dlv_jobs) AS a LEFT JOIN (SELECT job_id, prefetched FROM dlv_prefetched) AS p ON p.job_id = a.job_id) AS "afterCommit";
