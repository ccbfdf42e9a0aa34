-- Answered calls' ends decided in sets: each call ended once (ended_at IS NULL), and for the calls it ended their legs, minutes, call.completed, hangups and transcript; a repeat a duplicate
-- Written in src/modules/calls/call-ends-in-sets.ts (ends), call-transitions.ts (endSetSql); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH evt_input AS (SELECT * FROM json_to_recordset($1::json) AS i(event_id text, job_id text, kind text, carrier text, call_session_id text, control_id text, call_id text, target_index int, attempt int, occurred_at timestamptz,
  hangup_cause text, carrier_event_ref text)),
evt_turn_locks AS MATERIALIZED (SELECT s.session, pg_try_advisory_xact_lock(hashtextextended('call-session:' || s.session, 0)) AS taken
           FROM (SELECT DISTINCT i.call_session_id AS session FROM evt_input i WHERE i.call_session_id IS NOT NULL ORDER BY 1) s),
evt_turns AS MATERIALIZED (SELECT i.event_id, e.created_at AS received_at FROM evt_input i JOIN carrier_events e ON e.id = i.event_id
          WHERE e.id = ANY ($2::text[]) AND (SELECT count(*) FROM evt_turn_locks) >= 0
            AND EXISTS (SELECT FROM evt_turn_locks t WHERE t.session = i.call_session_id AND t.taken)
            AND NOT EXISTS (SELECT FROM carrier_events p WHERE p.normalized ? 'callSessionId' AND p.normalized->>'callSessionId' = i.call_session_id AND p.processed_at IS NULL
          AND p.attempts = 0 AND p.error IS NULL AND p.unhandled_since IS NULL AND (p.created_at, p.id) < (e.created_at, e.id))),
call_ends_callers_decided AS MATERIALIZED (SELECT i.event_id, c.id AS call_id, 'caller' AS leg_id, i.kind, i.occurred_at, t.received_at, c.ended_at IS NULL AS ends, c.status AS status_before, NULL::text AS ending_leg_id
           FROM evt_input i JOIN evt_turns t ON t.event_id = i.event_id
           JOIN calls c ON c.carrier = i.carrier AND c.carrier_call_id = i.call_session_id
          WHERE i.call_id IS NULL AND c.carrier_call_id = ANY ($3::text[]) AND c.caller_control_id = i.control_id AND (c.ended_at IS NOT NULL OR (c.status = 'in_progress'))
            FOR UPDATE OF c),
call_ends_decided AS MATERIALIZED (SELECT event_id, call_id, leg_id, kind, occurred_at, received_at, ends, status_before, ending_leg_id FROM call_ends_callers_decided),
evt_ready AS (SELECT i.event_id, i.job_id FROM evt_input i WHERE EXISTS (SELECT FROM call_ends_decided d WHERE d.event_id = i.event_id)),
job_locked AS (SELECT id FROM outbox_jobs WHERE job_id = ANY (ARRAY(SELECT job_id FROM evt_ready WHERE job_id = ANY ($4::text[]))) AND completed_at IS NULL AND failed_at IS NULL ORDER BY job_id FOR UPDATE),
job_claimed AS (UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, relayed_at = coalesce(relayed_at, now())
           WHERE id IN (SELECT id FROM job_locked) AND completed_at IS NULL AND failed_at IS NULL
           RETURNING job_id),
cev_consumed AS (UPDATE carrier_events c SET processed_at = now(), error = NULL, note = CASE WHEN EXISTS (SELECT FROM call_ends_decided d WHERE d.event_id = i.event_id AND NOT d.ends) THEN 'duplicate' END, attempts = c.attempts + 1, unhandled_since = NULL
             FROM evt_input i JOIN job_claimed j ON j.job_id = i.job_id
            WHERE c.id = ANY ($5::text[]) AND c.created_at BETWEEN (SELECT min(onceline_id_window_start(x)) FROM unnest($5::text[]) AS x) AND (SELECT max(onceline_id_window_end(x)) FROM unnest($5::text[]) AS x) AND c.id = i.event_id AND c.processed_at IS NULL
           RETURNING c.id AS consumed_event_id),
call_ends_consumed AS (SELECT d.event_id, d.call_id, d.ending_leg_id, d.occurred_at, d.status_before, i.hangup_cause AS cause, i.carrier_event_ref
         FROM call_ends_decided d JOIN cev_consumed k ON k.consumed_event_id = d.event_id JOIN evt_input i ON i.event_id = d.event_id),
calls_ended AS (UPDATE calls c SET status = CASE WHEN c.status = 'in_progress' OR (c.status = 'ringing' AND (c.answered_at IS NOT NULL OR coalesce(NULL::int, 0) > 0)) THEN 'completed' WHEN c.status = 'ringing' AND false THEN 'failed' WHEN c.status = 'ringing' THEN 'missed' ELSE c.status END,
              ended_at = e.occurred_at, hangup_cause = e.cause, updated_at = now(),
              answered_at = coalesce(c.answered_at, CASE WHEN NULL::int > 0 THEN e.occurred_at - make_interval(secs => NULL::int) END),
              duration_seconds = CASE WHEN (c.answered_at IS NOT NULL OR coalesce(NULL::int, 0) > 0) THEN coalesce(NULL::int, CASE WHEN c.answered_at IS NULL THEN 0 ELSE greatest(0, round(extract(epoch FROM e.occurred_at - c.answered_at)))::int END) ELSE 0 END,
              billable_minutes = CASE WHEN (c.answered_at IS NOT NULL OR coalesce(NULL::int, 0) > 0) THEN greatest(1, ceil(coalesce(NULL::int, CASE WHEN c.answered_at IS NULL THEN 0 ELSE greatest(0, round(extract(epoch FROM e.occurred_at - c.answered_at)))::int END) / 60.0))::int ELSE 0 END
         FROM call_ends_consumed e
        WHERE c.id = e.call_id AND c.created_at BETWEEN onceline_id_window_start(e.call_id) AND onceline_id_window_end(e.call_id) AND c.ended_at IS NULL
       RETURNING c.id, c.account_id, c.direction, c.from_number, c.to_number, c.status, c.carrier, c.carrier_call_id, c.caller_control_id, c.ring_plan, c.answered_leg, c.answered_at, c.bridged_at, c.ended_at, c.duration_seconds, c.billable_minutes, c.hangup_cause, c.transcribe, c.voicemail_url, c.transcript, c.created_at, e.event_id, e.ending_leg_id, e.status_before, e.cause, e.carrier_event_ref),
call_legs_of_ended AS (UPDATE call_legs l SET status = CASE WHEN l.id = x.ending_leg_id OR l.control_id IS NULL THEN 'ended' ELSE l.status END,
              ended_at = CASE WHEN l.id = x.ending_leg_id OR l.control_id IS NULL THEN x.ended_at END,
              hangup_cause = CASE WHEN l.id = x.ending_leg_id THEN coalesce(x.cause, 'unspecified') WHEN l.control_id IS NULL THEN 'call_ended' END
         FROM calls_ended x
        WHERE l.call_id = x.id AND onceline_id_time(l.call_id) BETWEEN onceline_id_window_start(x.id) AND onceline_id_window_end(x.id) AND l.ended_at IS NULL
       RETURNING l.id, l.call_id, l.control_id),
call_ends_repeated AS (SELECT event_id, call_id, leg_id, kind, occurred_at, received_at, ends, status_before, ending_leg_id FROM call_ends_decided d WHERE EXISTS (SELECT FROM call_ends_consumed e WHERE e.event_id = d.event_id) AND NOT EXISTS (SELECT FROM calls_ended x WHERE x.event_id = d.event_id)),
call_legs_ended_after_call AS (UPDATE call_legs l SET status = 'ended', ended_at = e.occurred_at, hangup_cause = coalesce(e.cause, 'unspecified')
         FROM call_ends_repeated d JOIN call_ends_consumed e ON e.event_id = d.event_id
        WHERE l.id = d.ending_leg_id AND l.call_id = d.call_id AND onceline_id_time(l.call_id) BETWEEN onceline_id_window_start(d.call_id) AND onceline_id_window_end(d.call_id) AND l.ended_at IS NULL),
call_end_hangups AS (SELECT x.id AS call_id, x.id || '-ended' AS batch, h.commands FROM calls_ended x
        CROSS JOIN LATERAL (SELECT jsonb_agg(u.command ORDER BY u.n, u.id) AS commands FROM (
               SELECT 0 AS n, o.id, jsonb_build_object('action', 'hangup', 'commandId', o.id || '-hangup', 'controlId', o.control_id) AS command FROM call_legs_of_ended o
                WHERE o.call_id = x.id AND o.control_id IS NOT NULL AND o.id IS DISTINCT FROM x.ending_leg_id
               UNION ALL
               SELECT 1, NULL, jsonb_build_object('action', 'hangup', 'commandId', x.id || '-hangup-caller', 'controlId', x.caller_control_id) WHERE x.ending_leg_id IS NOT NULL AND x.caller_control_id IS NOT NULL) u) h
        WHERE h.commands IS NOT NULL),
call_commands_queued AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'cmd-' || batch, 'calls', 'call-commands', jsonb_build_object('callId', call_id, 'commands', commands), now() + make_interval(secs => $6::int) FROM call_end_hangups
        WHERE outbox_job_twin('cmd-' || batch) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name, data),
call_commands_first_sends AS MATERIALIZED (SELECT q.job_id, jsonb_build_object('firstSend', jsonb_build_object('firstSentAt', s.first_sent_at, 'sends', s.sends)) AS prefetched
           FROM call_commands_queued q CROSS JOIN LATERAL call_command_send(q.data->'commands'->0->>'commandId', q.data->>'callId') s),
call_end_usage AS (SELECT account_id, id AS resource_id, billable_minutes AS quantity,
              jsonb_build_object('resource', jsonb_build_object('type', 'call', 'id', id), 'transition', status_before || ' → ' || status, 'settled_by', NULL,
                'carrier', carrier, 'carrier_resource_id', carrier_call_id,
                'carrier_events', jsonb_build_array(jsonb_build_object('id', event_id, 'carrier_event_id', carrier_event_ref, 'role', 'hangup', 'occurred_at', to_char(ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))),
                'price_rule', jsonb_build_object('unit', 'minute', 'answered_at', to_char(answered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'ended_at', to_char(ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'duration_seconds', duration_seconds,
                  'duration_source', 'answered_at_to_ended_at', 'counted', 'ceil(duration_seconds / 60), at least 1')) AS cause
         FROM calls_ended WHERE billable_minutes > 0),
use_recorded AS (INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
       SELECT onceline_id('use'), account_id, $8::text, resource_id, quantity, $7::bigint, quantity::bigint * $7::bigint, jsonb_set(cause, '{price_rule}', (cause -> 'price_rule') || jsonb_build_object('unit_price_micros', $7::bigint, 'quantity', quantity::bigint))
                   || jsonb_build_object('legacy', false)
         FROM (SELECT * FROM call_end_usage ORDER BY resource_id) AS call_end_usage
        WHERE usage_record_twin($8::text, resource_id) IS NULL
       ON CONFLICT DO NOTHING RETURNING id),
call_end_announced AS (SELECT account_id, type, payload FROM (
         SELECT account_id, id, t.n, t.type, jsonb_build_object('id', id, 'record_type', 'call', 'direction', direction, 'from', from_number, 'to', to_number, 'status', status, 'carrier', carrier,
  'carrier_call_id', CASE WHEN carrier_call_id = id THEN NULL ELSE carrier_call_id END, 'answered_at', to_char(answered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'ended_at', to_char(ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
  'duration_seconds', duration_seconds, 'billable_minutes', billable_minutes, 'hangup_cause', hangup_cause, 'transcribe', transcribe, 'voicemail_url', voicemail_url,
  'transcript', transcript, 'ring_plan', (SELECT jsonb_object_agg(p.key, p.value) FROM jsonb_each(ring_plan) p WHERE p.key IN ('targets', 'next', 'fallback')),
  'legs', '[]'::jsonb, 'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) || jsonb_build_object('legs', (SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'target_index', target_index, 'attempt', attempt, 'to', to_number, 'status', status,
  'dialed_at', to_char(dialed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'answered_at', to_char(answered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'ended_at', to_char(ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'hangup_cause', hangup_cause) ORDER BY dialed_at, target_index, attempt), '[]'::jsonb) FROM (
        SELECT l.id, l.target_index, l.attempt, l.to_number, l.dialed_at, l.answered_at,
               CASE WHEN l.id = x.ending_leg_id THEN 'ended' ELSE l.status END AS status,
               CASE WHEN l.id = x.ending_leg_id THEN x.ended_at ELSE l.ended_at END AS ended_at,
               CASE WHEN l.id = x.ending_leg_id THEN coalesce(x.cause, 'unspecified') ELSE l.hangup_cause END AS hangup_cause
          FROM call_legs l WHERE l.call_id = x.id AND onceline_id_time(l.call_id) BETWEEN onceline_id_window_start(x.id) AND onceline_id_window_end(x.id)) v)) AS payload
           FROM calls_ended x CROSS JOIN LATERAL (VALUES (0, 'call.answered'), (1, 'call.completed')) AS t(n, type)
          WHERE status = 'completed' AND (t.n = 1 OR bridged_at IS NULL)) a
        ORDER BY id, n),
evt_emitted AS (INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT onceline_id('evt'), account_id, type::text, $9::int, payload FROM call_end_announced
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
       SELECT 'dlv-' || id || '-' || round || '-' || attempt, 'webhooks', 'webhook-delivery-attempt', jsonb_build_object('deliveryId', id, 'eventId', event_id, 'round', round, 'attempt', attempt), now() + make_interval(secs => $10::int) FROM dlv_first_attempts
       ON CONFLICT DO NOTHING RETURNING job_id, name),
dlv_prefetched AS MATERIALIZED (SELECT 'dlv-' || id || '-' || round || '-' || attempt AS job_id, prefetched FROM (
             SELECT f.id, f.round, f.attempt,
                    jsonb_build_object('id', d.id, 'status', d.status, 'round', d.round, 'attempt_count', d.attempt_count,
            'round_first_attempt', d.round_first_attempt, 'endpoint_id', d.endpoint_id, 'url', w.url, 'enabled', w.enabled,
            'deleted', false, 'secrets', to_jsonb(array_remove(ARRAY[w.secret, CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END], NULL)), 'event_id', e.id, 'type', e.type, 'payload', e.payload,
            'event_created_at', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) || jsonb_build_object('job_round', f.round, 'job_attempt', f.attempt) AS prefetched
               FROM dlv_first_attempts f JOIN dlv_created d ON d.id = f.id
               JOIN dlv_endpoints w ON w.endpoint_id = d.endpoint_id AND w.event_id = d.event_id
               JOIN evt_emitted e ON e.id = d.event_id) AS first_attempt),
call_ends_transcribed AS (SELECT id FROM calls_ended WHERE transcribe AND answered_at IS NOT NULL),
call_end_transcripts AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'transcript-' || id, 'calls', 'call-transcript', jsonb_build_object('callId', id), clock_timestamp() + make_interval(secs => $11::float8) FROM call_ends_transcribed
        WHERE outbox_job_twin('transcript-' || id) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name),
call_ends_applied AS (SELECT d.event_id, d.call_id, d.leg_id, d.kind, d.occurred_at, d.received_at, d.ends, d.status_before, d.ending_leg_id FROM call_ends_decided d JOIN calls_ended x ON x.event_id = d.event_id),
call_end_timeline_applied AS (INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at)
       SELECT e.* FROM (SELECT r.call_id, r.event_id, r.kind, r.leg_id, $12::text, $13::text, r.occurred_at, r.received_at
                          FROM call_ends_applied r JOIN cev_consumed k ON k.consumed_event_id = r.event_id ORDER BY r.event_id) e
        WHERE call_timeline_twin(e.event_id) IS NULL
       ON CONFLICT DO NOTHING),
call_timeline_entries AS (INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at)
       SELECT e.* FROM (SELECT r.call_id, r.event_id, r.kind, r.leg_id, $14::text, $15::text, r.occurred_at, r.received_at
                          FROM call_ends_repeated r JOIN cev_consumed k ON k.consumed_event_id = r.event_id ORDER BY r.event_id) e
        WHERE call_timeline_twin(e.event_id) IS NULL
       ON CONFLICT DO NOTHING)
SELECT (SELECT coalesce(jsonb_agg(job_id), '[]'::jsonb) FROM job_claimed) AS claimed, (SELECT coalesce(jsonb_agg(i.job_id), '[]'::jsonb) FROM evt_input i WHERE NOT EXISTS (SELECT FROM evt_ready r WHERE r.event_id = i.event_id)) AS unready,
                  ((SELECT count(*) FROM call_end_transcripts))::int AS jobs, (SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id, 'prefetched', p.prefetched) || CASE WHEN a.payload IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('payload', a.payload) END), '[]'::jsonb)
               FROM (SELECT name, job_id, data AS payload FROM call_commands_queued UNION ALL SELECT name, job_id, NULL::jsonb AS payload FROM dlv_jobs) AS a LEFT JOIN (SELECT job_id, prefetched FROM call_commands_first_sends UNION ALL SELECT job_id, prefetched FROM dlv_prefetched) AS p ON p.job_id = a.job_id) AS "afterCommit";
