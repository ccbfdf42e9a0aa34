-- An inbound SMS: consume the event, store the message, bill it, opt-out keywords, message.received and its deliveries, in one statement
-- Written in src/modules/messaging/messaging-carrier-events.ts (receive); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH evt_input AS (SELECT * FROM json_to_recordset($1::json) AS i(event_id text, job_id text, message_id text, carrier text, carrier_message_id text, from_number text, to_number text, text text, segments int, encoding text, carrier_event_id text, occurred_at text)),
msg_owner AS (SELECT r.event_id, p.account_id, p.carrier FROM evt_input r JOIN phone_numbers p ON p.phone_number = r.to_number AND p.status = 'active'),
job_locked AS (SELECT id FROM outbox_jobs WHERE job_id = ANY ($2::text[]) AND completed_at IS NULL AND failed_at IS NULL ORDER BY job_id FOR UPDATE),
job_claimed AS (UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, relayed_at = coalesce(relayed_at, now())
           WHERE id IN (SELECT id FROM job_locked) AND completed_at IS NULL AND failed_at IS NULL
           RETURNING job_id),
cev_consumed AS (UPDATE carrier_events c SET processed_at = now(), error = NULL, note = CASE WHEN NOT EXISTS (SELECT FROM msg_owner o WHERE o.event_id = i.event_id) THEN 'no account owns ' || i.to_number END, attempts = c.attempts + 1, unhandled_since = NULL
             FROM evt_input i JOIN job_claimed j ON j.job_id = i.job_id
            WHERE c.id = ANY ($3::text[]) AND c.created_at BETWEEN (SELECT min(onceline_id_window_start(x)) FROM unnest($3::text[]) AS x) AND (SELECT max(onceline_id_window_end(x)) FROM unnest($3::text[]) AS x) AND c.id = i.event_id AND c.processed_at IS NULL
           RETURNING c.id AS consumed_event_id),
msg_received AS (INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
       SELECT i.message_id, o.account_id, 'inbound', i.from_number, i.to_number, i.text, 'received', i.segments, i.encoding, i.carrier, i.carrier_message_id
         FROM evt_input i JOIN msg_owner o ON o.event_id = i.event_id JOIN cev_consumed c ON c.consumed_event_id = i.event_id
        WHERE message_twin(i.carrier, i.carrier_message_id) IS NULL
       ON CONFLICT DO NOTHING
       RETURNING id, 'message' AS record_type, direction, from_number AS "from", to_number AS "to", text, status,
  segments, encoding, carrier, carrier_message_id, error_code, error_detail, send_at,
  CASE status WHEN 'scheduled' THEN coalesce(send_slot, send_at) WHEN 'queued' THEN coalesce(send_slot, (SELECT greatest(p.next_send_at, p.send_paused_until, now()) FROM phone_numbers p WHERE p.phone_number = from_number AND p.status IN ('ordering', 'active', 'releasing'))) END AS expected_send_at,
  created_at, updated_at, account_id),
msg_received_cause AS (SELECT r.*, i.event_id AS cause_event_id, i.carrier_event_id AS cause_carrier_event_id, i.occurred_at AS cause_occurred_at FROM msg_received r JOIN evt_input i ON i.message_id = r.id),
use_recorded AS (INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       SELECT onceline_id('use'), account_id, $7::text, id, segments, $6::bigint, segments::bigint * $6::bigint, jsonb_set(jsonb_build_object('resource', jsonb_build_object('type', $5::text, 'id', id),
    'transition', '→ received', 'settled_by', NULL::text, 'carrier', carrier,
    'carrier_resource_id', carrier_message_id, 'carrier_events', CASE WHEN cause_event_id IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('id', cause_event_id, 'carrier_event_id', cause_carrier_event_id, 'role', $4::text, 'occurred_at', cause_occurred_at)) END, 'price_rule', jsonb_build_object('unit', 'segment', 'segments', segments, 'encoding', encoding)), '{price_rule}', (jsonb_build_object('resource', jsonb_build_object('type', $5::text, 'id', id),
    'transition', '→ received', 'settled_by', NULL::text, 'carrier', carrier,
    'carrier_resource_id', carrier_message_id, 'carrier_events', CASE WHEN cause_event_id IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('id', cause_event_id, 'carrier_event_id', cause_carrier_event_id, 'role', $4::text, 'occurred_at', cause_occurred_at)) END, 'price_rule', jsonb_build_object('unit', 'segment', 'segments', segments, 'encoding', encoding)) -> 'price_rule') || jsonb_build_object('unit_price_micros', $6::bigint, 'quantity', segments::bigint))
                   || jsonb_build_object('legacy', false)
         FROM (SELECT * FROM msg_received_cause ORDER BY id) AS msg_received_cause
        WHERE usage_record_twin($7::text, id) IS NULL
       ON CONFLICT DO NOTHING RETURNING id),
msg_history AS (INSERT INTO message_status_history (message_id, status) SELECT id, 'received' FROM msg_received),
opt_keyword AS (SELECT r.id AS message_id, r.account_id, r."to" AS our_number, r."from" AS handset, r.carrier,
              CASE WHEN upper(btrim(r.text, E' \t\r\n')) = ANY($8::text[]) THEN 'opt_out' WHEN upper(btrim(r.text, E' \t\r\n')) = ANY($9::text[]) THEN 'opt_in' ELSE 'help' END AS keyword,
              CASE a.opt_out_scope WHEN 'account' THEN '*' ELSE r."to" END AS scope_number, a.keyword_replies
         FROM msg_received r JOIN accounts a ON a.id = r.account_id
        WHERE upper(btrim(r.text, E' \t\r\n')) = ANY($8::text[]) OR upper(btrim(r.text, E' \t\r\n')) = ANY($9::text[]) OR upper(btrim(r.text, E' \t\r\n')) = ANY($10::text[])
          FOR SHARE OF a),
opt_changed AS (INSERT INTO message_opt_outs (account_id, our_number, handset, opted_out, changed_by, source)
     SELECT account_id, scope_number, handset, opted_out, changed_by, source FROM (SELECT DISTINCT ON (account_id, scope_number, handset) account_id, scope_number, handset, keyword = 'opt_out' AS opted_out, message_id AS changed_by, 'keyword' AS source
         FROM opt_keyword WHERE keyword <> 'help'
        ORDER BY account_id, scope_number, handset, message_id DESC) r
     ON CONFLICT (account_id, handset, our_number) DO UPDATE
        SET opted_out = EXCLUDED.opted_out, changed_by = EXCLUDED.changed_by, source = EXCLUDED.source, changed_at = clock_timestamp()
      WHERE message_opt_outs.opted_out <> EXCLUDED.opted_out
     RETURNING account_id, our_number, handset, opted_out, changed_by, source, changed_at, (xmax = 0) AS inserted),
opt_announced AS (SELECT * FROM opt_changed WHERE opted_out OR NOT inserted),
opt_seq_bumped AS (UPDATE phone_numbers p SET opt_out_seq = p.opt_out_seq + 1
            FROM (SELECT q.id FROM phone_numbers q WHERE q.id IN (SELECT n.id FROM opt_announced c JOIN phone_numbers n ON n.phone_number = c.our_number AND n.account_id = c.account_id AND n.status IN ('ordering', 'active', 'releasing')
       UNION ALL
       SELECT n.id FROM opt_announced c JOIN phone_numbers n ON c.our_number = '*' AND n.account_id = c.account_id AND n.status IN ('ordering', 'active', 'releasing')) AND q.status IN ('ordering', 'active', 'releasing') ORDER BY q.id FOR NO KEY UPDATE) bump
           WHERE p.id = bump.id
          RETURNING p.id),
opt_events AS (SELECT account_id, CASE WHEN opted_out THEN 'message.opted_out' ELSE 'message.opted_in' END AS type,
            jsonb_build_object('id', changed_by, 'record_type', 'opt_out', 'handset', handset, 'number', NULLIF(our_number, '*'),
                               'scope', CASE our_number WHEN '*' THEN 'account' ELSE 'number' END, 'opted_out', opted_out, 'source', source,
                               'changed_at', to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS payload
       FROM opt_announced),
opt_reply_queued AS (INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, auto_reply)
       SELECT onceline_id('msg'), k.account_id, 'outbound', k.our_number, k.handset, reply->>'text', 'queued',
              (reply->>'segments')::int, reply->>'encoding', k.carrier, k.keyword
         FROM opt_keyword k CROSS JOIN LATERAL (SELECT coalesce(k.keyword_replies -> k.keyword, $11::jsonb -> k.keyword) AS reply) r
        WHERE k.keyword = 'help' OR EXISTS (SELECT FROM opt_announced c WHERE c.changed_by = k.message_id)
       RETURNING id),
opt_reply_history AS (INSERT INTO message_status_history (message_id, status) SELECT id, 'queued' FROM opt_reply_queued),
opt_reply_jobs AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'dispatch-' || id, 'messaging-replies', 'dispatch-reply', jsonb_build_object('messageId', id), now() FROM opt_reply_queued
        WHERE outbox_job_twin('dispatch-' || id) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name),
msg_announced AS (SELECT account_id, 'message.received' AS type, jsonb_build_object('id', id, 'record_type', record_type, 'direction', direction, 'from', "from", 'to', "to",
  'text', text, 'status', status, 'segments', segments, 'encoding', encoding, 'carrier', carrier,
  'carrier_message_id', carrier_message_id, 'error_code', error_code, 'error_detail', error_detail,
  'send_at', to_char(send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'expected_send_at', to_char(expected_send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS payload FROM msg_received
       UNION ALL SELECT account_id, type, payload FROM opt_events),
evt_emitted AS (INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT onceline_id('evt'), account_id, type::text, $12::int, payload FROM msg_announced
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
       SELECT 'dlv-' || id || '-' || round || '-' || attempt, 'webhooks', 'webhook-delivery-attempt', jsonb_build_object('deliveryId', id, 'eventId', event_id, 'round', round, 'attempt', attempt), now() + make_interval(secs => $13::int) FROM dlv_first_attempts
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
SELECT (SELECT coalesce(jsonb_agg(job_id), '[]'::jsonb) FROM job_claimed) AS claimed,
                  ((SELECT count(*) FROM opt_reply_jobs))::int AS jobs, (SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id, 'prefetched', p.prefetched)), '[]'::jsonb)
               FROM (SELECT name, job_id, NULL::jsonb AS payload FROM dlv_jobs) AS a LEFT JOIN (SELECT job_id, prefetched FROM dlv_prefetched) AS p ON p.job_id = a.job_id) AS "afterCommit";
