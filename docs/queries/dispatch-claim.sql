-- The dispatch claims a queued message (or fails it when the handset opted out since)
-- Written in src/modules/messaging/message-transitions.ts; captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH locked AS (SELECT id AS locked_id, status AS previous, claim_token AS holder, claimed_until AS held_until,
              (auto_reply IS NULL AND status = ANY($3::text[]) AND EXISTS (SELECT FROM message_opt_outs o JOIN accounts oa ON oa.id = o.account_id
                   WHERE o.account_id = account_id AND o.handset = to_number AND o.opted_out
                     AND o.our_number = CASE oa.opt_out_scope WHEN 'account' THEN '*' ELSE from_number END)) AS refused
         FROM messages WHERE id = $1::text AND direction = 'outbound' AND status = ANY($2::text[])),
refused AS (UPDATE messages m SET status = 'failed', error_code = 'recipient_opted_out', error_detail = 'the recipient replied with an opt-out keyword',
              claimed_until = NULL, updated_at = now()
         FROM locked WHERE m.id = locked.locked_id AND locked.refused
       RETURNING id, 'message' AS record_type, direction, from_number AS "from", to_number AS "to", text, status,
  segments, encoding, carrier, carrier_message_id, error_code, error_detail, send_at, created_at, updated_at, account_id),
msg_history AS (INSERT INTO message_status_history (message_id, status) SELECT id, $4::text FROM refused),
evt_emitted AS (INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT onceline_id('evt'), account_id, $5::text, $6::int, jsonb_build_object('id', id, 'record_type', record_type, 'direction', direction, 'from', "from", 'to', "to",
  'text', text, 'status', status, 'segments', segments, 'encoding', encoding, 'carrier', carrier,
  'carrier_message_id', carrier_message_id, 'error_code', error_code, 'error_detail', error_detail,
  'send_at', to_char(send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) FROM refused
       RETURNING id, account_id, type, payload, created_at),
dlv_endpoints AS (SELECT w.id AS endpoint_id, w.enabled, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, e.id AS event_id, e.account_id
         FROM evt_emitted e JOIN webhook_endpoints w ON w.account_id = e.account_id
        WHERE w.deleted_at IS NULL AND (w.event_types IS NULL OR $7::text = ANY (w.event_types))
        ORDER BY w.id FOR SHARE OF w),
dlv_created AS (INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, parked_at, next_attempt_at)
       SELECT onceline_id('dlv'), event_id, endpoint_id, account_id,
              CASE WHEN enabled THEN 'pending' ELSE 'parked' END,
              CASE WHEN enabled THEN NULL ELSE now() END,
              CASE WHEN enabled THEN now() ELSE NULL END
         FROM dlv_endpoints
       ON CONFLICT (event_id, endpoint_id) DO NOTHING
       RETURNING id, status, round, attempt_count, round_first_attempt, endpoint_id, event_id),
dlv_first_attempts AS (SELECT id, 1 AS round, 1 AS attempt FROM dlv_created WHERE status = 'pending'),
dlv_jobs AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'dlv-' || id || '-' || round || '-' || attempt, 'webhooks', 'webhook-delivery-attempt', jsonb_build_object('deliveryId', id, 'round', round, 'attempt', attempt), now() FROM dlv_first_attempts
       ON CONFLICT (job_id) DO NOTHING RETURNING job_id, name),
claimed AS (UPDATE messages m SET status = 'sending', claim_token = $8::text, claimed_until = now() + make_interval(secs => $9::int),
              updated_at = CASE WHEN locked.previous = ANY($3::text[]) THEN now() ELSE m.updated_at END
         FROM locked
        WHERE m.id = locked.locked_id AND NOT locked.refused AND (locked.previous <> 'sending' OR locked.held_until IS NULL OR locked.held_until <= now())
       RETURNING m.id, m.from_number, m.to_number, m.text, m.carrier, m.claim_token AS token, locked.previous)
SELECT locked.holder, locked.held_until, locked.refused, ((SELECT count(*) FROM dlv_jobs))::int AS jobs, claimed.* FROM locked LEFT JOIN claimed ON claimed.id = locked.locked_id;
