-- New calls started in sets: each call once per carrier session (call_twin), started only on the number's settings as read before (the route compared), its first leg and dial, call.initiated and the timeline, in one statement
-- Written in src/modules/calls/call-starts-in-sets.ts (callStarts); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH evt_input AS (SELECT * FROM json_to_recordset($1::json) AS i(event_id text, job_id text, kind text, carrier text, call_session_id text, control_id text, from_number text, to_number text, occurred_at timestamptz,
  account_id text, voice jsonb, call_id text, ring_plan jsonb, transcribe boolean, leg_id text, leg_target int, leg_attempt int, leg_to text,
  batch text, commands jsonb, payload jsonb)),
evt_turn_locks AS MATERIALIZED (SELECT s.session, pg_try_advisory_xact_lock(hashtextextended('call-session:' || s.session, 0)) AS taken
           FROM (SELECT DISTINCT i.call_session_id AS session FROM evt_input i WHERE i.call_session_id IS NOT NULL ORDER BY 1) s),
evt_turns AS MATERIALIZED (SELECT i.event_id, e.created_at AS received_at FROM evt_input i JOIN carrier_events e ON e.id = i.event_id
          WHERE e.id = ANY ($2::text[]) AND (SELECT count(*) FROM evt_turn_locks) >= 0
            AND EXISTS (SELECT FROM evt_turn_locks t WHERE t.session = i.call_session_id AND t.taken)
            AND NOT EXISTS (SELECT FROM carrier_events p WHERE p.normalized ? 'callSessionId' AND p.normalized->>'callSessionId' = i.call_session_id AND p.processed_at IS NULL
          AND p.attempts = 0 AND p.error IS NULL AND p.unhandled_since IS NULL AND (p.created_at, p.id) < (e.created_at, e.id))),
call_start_routes AS (SELECT r.event_id, p.account_id, p.carrier, p.voice FROM evt_input r JOIN phone_numbers p ON p.phone_number = r.to_number AND p.status = 'active'),
call_start_probed AS MATERIALIZED (SELECT i.event_id, t.received_at, call_twin(i.carrier, i.call_session_id) AS twin,
              coalesce(r.account_id = i.account_id AND r.voice = i.voice, false) AS as_read
         FROM evt_input i JOIN evt_turns t ON t.event_id = i.event_id JOIN call_start_routes r ON r.event_id = i.event_id),
evt_ready AS (SELECT i.event_id, i.job_id FROM evt_input i WHERE EXISTS (SELECT FROM call_start_probed p WHERE p.event_id = i.event_id AND (p.twin IS NOT NULL OR p.as_read))),
job_locked AS (SELECT id FROM outbox_jobs WHERE job_id = ANY (ARRAY(SELECT job_id FROM evt_ready WHERE job_id = ANY ($3::text[]))) AND completed_at IS NULL AND failed_at IS NULL ORDER BY job_id FOR UPDATE),
job_claimed AS (UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, relayed_at = coalesce(relayed_at, now())
           WHERE id IN (SELECT id FROM job_locked) AND completed_at IS NULL AND failed_at IS NULL
           RETURNING job_id),
cev_consumed AS (UPDATE carrier_events c SET processed_at = now(), error = NULL, note = CASE WHEN EXISTS (SELECT FROM call_start_probed p WHERE p.event_id = i.event_id AND p.twin IS NOT NULL) THEN $5::text END, attempts = c.attempts + 1, unhandled_since = NULL
             FROM evt_input i JOIN job_claimed j ON j.job_id = i.job_id
            WHERE c.id = ANY ($4::text[]) AND c.created_at BETWEEN (SELECT min(onceline_id_window_start(x)) FROM unnest($4::text[]) AS x) AND (SELECT max(onceline_id_window_end(x)) FROM unnest($4::text[]) AS x) AND c.id = i.event_id AND c.processed_at IS NULL
           RETURNING c.id AS consumed_event_id),
calls_started AS (INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, ring_plan, transcribe, created_at)
       SELECT i.call_id, i.account_id, 'inbound', i.from_number, i.to_number, 'ringing', i.carrier, i.call_session_id, i.control_id, i.ring_plan, i.transcribe, onceline_id_time(i.call_id)
         FROM evt_input i JOIN cev_consumed k ON k.consumed_event_id = i.event_id JOIN call_start_probed p ON p.event_id = i.event_id
        WHERE p.twin IS NULL AND p.as_read
       ON CONFLICT DO NOTHING
       RETURNING id AS call_id, created_at),
call_legs_started AS (INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status)
       SELECT i.leg_id, s.call_id, i.leg_target, i.leg_attempt, i.leg_to, 'dialing' FROM evt_input i JOIN calls_started s ON s.call_id = i.call_id
       ON CONFLICT DO NOTHING RETURNING call_id),
call_start_commands AS (SELECT i.call_id, i.batch, i.commands FROM evt_input i JOIN call_legs_started l ON l.call_id = i.call_id),
call_commands_queued AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'cmd-' || batch, 'calls', 'call-commands', jsonb_build_object('callId', call_id, 'commands', commands), now() + make_interval(secs => $6::int) FROM call_start_commands
        WHERE outbox_job_twin('cmd-' || batch) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name, data),
call_commands_first_sends AS MATERIALIZED (SELECT q.job_id, jsonb_build_object('firstSend', jsonb_build_object('firstSentAt', s.first_sent_at, 'sends', s.sends)) AS prefetched
           FROM call_commands_queued q CROSS JOIN LATERAL call_command_send(q.data->'commands'->0->>'commandId', q.data->>'callId') s),
call_start_announced AS (SELECT i.account_id, i.payload || jsonb_build_object('created_at', to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS payload FROM evt_input i JOIN calls_started s ON s.call_id = i.call_id),
evt_emitted AS (INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT onceline_id('evt'), account_id, $7::text, $8::int, payload FROM call_start_announced
       RETURNING id, account_id, type, payload, created_at),
dlv_endpoints AS (SELECT w.id AS endpoint_id, w.enabled, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, e.id AS event_id, e.account_id
         FROM evt_emitted e JOIN webhook_endpoints w ON w.account_id = e.account_id
        WHERE w.deleted_at IS NULL AND (w.event_types IS NULL OR $9::text = ANY (w.event_types))
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
call_starts_applied AS (SELECT i.event_id, s.call_id AS call_id, 'caller' AS leg_id, i.kind, i.occurred_at, p.received_at
         FROM evt_input i JOIN call_start_probed p ON p.event_id = i.event_id JOIN calls_started s ON s.call_id = i.call_id),
call_timeline_entries AS (INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at)
       SELECT e.* FROM (SELECT r.call_id, r.event_id, r.kind, r.leg_id, $11::text, $12::text, r.occurred_at, r.received_at
                          FROM call_starts_applied r JOIN cev_consumed k ON k.consumed_event_id = r.event_id ORDER BY r.event_id) e
        WHERE call_timeline_twin(e.event_id) IS NULL
       ON CONFLICT DO NOTHING),
call_starts_repeated AS (SELECT i.event_id, p.twin AS call_id, 'caller' AS leg_id, i.kind, i.occurred_at, p.received_at
         FROM evt_input i JOIN call_start_probed p ON p.event_id = i.event_id WHERE p.twin IS NOT NULL),
call_timeline_repeats AS (INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at)
       SELECT e.* FROM (SELECT r.call_id, r.event_id, r.kind, r.leg_id, $13::text, $14::text, r.occurred_at, r.received_at
                          FROM call_starts_repeated r JOIN cev_consumed k ON k.consumed_event_id = r.event_id ORDER BY r.event_id) e
        WHERE call_timeline_twin(e.event_id) IS NULL
       ON CONFLICT DO NOTHING)
SELECT (SELECT coalesce(jsonb_agg(job_id), '[]'::jsonb) FROM job_claimed) AS claimed, (SELECT coalesce(jsonb_agg(i.job_id), '[]'::jsonb) FROM evt_input i WHERE NOT EXISTS (SELECT FROM evt_ready r WHERE r.event_id = i.event_id)) AS unready,
                  (0)::int AS jobs, (SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id, 'prefetched', p.prefetched) || CASE WHEN a.payload IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('payload', a.payload) END), '[]'::jsonb)
               FROM (SELECT name, job_id, data AS payload FROM call_commands_queued UNION ALL SELECT name, job_id, NULL::jsonb AS payload FROM dlv_jobs) AS a LEFT JOIN (SELECT job_id, prefetched FROM call_commands_first_sends UNION ALL SELECT job_id, prefetched FROM dlv_prefetched) AS p ON p.job_id = a.job_id) AS "afterCommit";
