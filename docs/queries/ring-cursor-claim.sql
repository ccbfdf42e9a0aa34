-- Leg hangups decided in sets: each leg ended once, each call's ring plan moved by compare-and-set from the plan read (ring_plan = expected), the next leg and its dial once
-- Written in src/modules/calls/call-event-sets.ts (legHangups), call-transitions.ts (handOffsCte; claimRingTurn in a transaction); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH evt_input AS (SELECT * FROM json_to_recordset($1::json) AS i(event_id text, job_id text, kind text, carrier text, call_session_id text, control_id text, call_id text, target_index int, attempt int, occurred_at timestamptz, hangup_cause text, expected_plan jsonb, caller_control_id text, next_plan jsonb, new_leg_id text, new_target int, new_attempt int, new_to text, batch text, commands jsonb)),
evt_turn_locks AS MATERIALIZED (SELECT s.session, pg_try_advisory_xact_lock(hashtextextended('call-session:' || s.session, 0)) AS taken
           FROM (SELECT DISTINCT i.call_session_id AS session FROM evt_input i WHERE i.call_session_id IS NOT NULL ORDER BY 1) s),
evt_turns AS MATERIALIZED (SELECT i.event_id, e.created_at AS received_at FROM evt_input i JOIN carrier_events e ON e.id = i.event_id
          WHERE e.id = ANY ($2::text[]) AND (SELECT count(*) FROM evt_turn_locks) >= 0
            AND EXISTS (SELECT FROM evt_turn_locks t WHERE t.session = i.call_session_id AND t.taken)
            AND NOT EXISTS (SELECT FROM carrier_events p WHERE p.normalized ? 'callSessionId' AND p.normalized->>'callSessionId' = i.call_session_id AND p.processed_at IS NULL
          AND p.attempts = 0 AND p.error IS NULL AND p.unhandled_since IS NULL AND (p.created_at, p.id) < (e.created_at, e.id))),
call_legs_decided AS MATERIALIZED (SELECT i.event_id, c.id AS call_id, l.id AS leg_id, i.control_id, i.kind, i.occurred_at, t.received_at, l.ended_at IS NULL AS first_case
         FROM evt_input i JOIN evt_turns t ON t.event_id = i.event_id
         JOIN calls c ON c.id = i.call_id AND c.carrier = i.carrier AND c.carrier_call_id = i.call_session_id
         JOIN call_legs l ON l.call_id = c.id AND onceline_id_time(l.call_id) BETWEEN (SELECT min(onceline_id_window_start(x)) FROM unnest($3::text[]) AS x) AND (SELECT max(onceline_id_window_end(x)) FROM unnest($3::text[]) AS x) AND l.target_index = i.target_index AND l.attempt = i.attempt
        WHERE c.id = ANY ($3::text[]) AND ((l.control_id = i.control_id AND l.ended_at IS NOT NULL AND (c.ended_at IS NOT NULL OR (c.ring_plan IS NOT NULL AND c.answered_leg IS DISTINCT FROM l.id))) OR (i.expected_plan IS NOT NULL AND l.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = i.control_id)
  AND c.status = 'ringing' AND c.ended_at IS NULL AND c.answered_leg IS DISTINCT FROM l.id
  AND c.ring_plan = i.expected_plan AND c.caller_control_id IS NOT DISTINCT FROM i.caller_control_id))
          FOR UPDATE OF c FOR NO KEY UPDATE OF l),
evt_ready AS (SELECT i.event_id, i.job_id FROM evt_input i WHERE EXISTS (SELECT FROM call_legs_decided d WHERE d.event_id = i.event_id)),
job_locked AS (SELECT id FROM outbox_jobs WHERE job_id = ANY (ARRAY(SELECT job_id FROM evt_ready WHERE job_id = ANY ($4::text[]))) AND completed_at IS NULL AND failed_at IS NULL ORDER BY job_id FOR UPDATE),
job_claimed AS (UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, relayed_at = coalesce(relayed_at, now())
           WHERE id IN (SELECT id FROM job_locked) AND completed_at IS NULL AND failed_at IS NULL
           RETURNING job_id),
cev_consumed AS (UPDATE carrier_events c SET processed_at = now(), error = NULL, note = CASE WHEN EXISTS (SELECT FROM call_legs_decided d WHERE d.event_id = i.event_id AND NOT d.first_case) THEN 'duplicate' END, attempts = c.attempts + 1, unhandled_since = NULL
             FROM evt_input i JOIN job_claimed j ON j.job_id = i.job_id
            WHERE c.id = ANY ($5::text[]) AND c.created_at BETWEEN (SELECT min(onceline_id_window_start(x)) FROM unnest($5::text[]) AS x) AND (SELECT max(onceline_id_window_end(x)) FROM unnest($5::text[]) AS x) AND c.id = i.event_id AND c.processed_at IS NULL
           RETURNING c.id AS consumed_event_id),
call_legs_repeated AS (SELECT * FROM call_legs_decided WHERE NOT first_case),
call_legs_applied AS (SELECT * FROM call_legs_decided WHERE first_case),
call_timeline_entries AS (INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at)
       SELECT e.* FROM (SELECT r.call_id, r.event_id, r.kind, r.leg_id, $6::text, $7::text, r.occurred_at, r.received_at
                          FROM call_legs_repeated r JOIN cev_consumed k ON k.consumed_event_id = r.event_id ORDER BY r.event_id) e
        WHERE call_timeline_twin(e.event_id) IS NULL
       ON CONFLICT DO NOTHING),
call_timeline_applied AS (INSERT INTO call_timeline (call_id, carrier_event_id, event_type, leg, outcome, note, occurred_at, received_at)
       SELECT e.* FROM (SELECT r.call_id, r.event_id, r.kind, r.leg_id, $8::text, $9::text, r.occurred_at, r.received_at
                          FROM call_legs_applied r JOIN cev_consumed k ON k.consumed_event_id = r.event_id ORDER BY r.event_id) e
        WHERE call_timeline_twin(e.event_id) IS NULL
       ON CONFLICT DO NOTHING),
call_legs_first AS (SELECT d.call_id, d.leg_id, d.control_id, d.occurred_at, i.hangup_cause, i.expected_plan, i.caller_control_id, i.next_plan, i.new_leg_id, i.new_target, i.new_attempt, i.new_to, i.batch, i.commands
         FROM call_legs_applied d JOIN cev_consumed k ON k.consumed_event_id = d.event_id JOIN evt_input i ON i.event_id = d.event_id),
call_legs_handed_off AS (UPDATE call_legs l SET status = 'ended', ended_at = h.occurred_at, hangup_cause = h.hangup_cause, control_id = coalesce(l.control_id, h.control_id)
         FROM call_legs_first h
        WHERE l.id = h.leg_id AND l.call_id = h.call_id AND onceline_id_time(l.call_id) BETWEEN onceline_id_window_start(h.call_id) AND onceline_id_window_end(h.call_id) AND l.ended_at IS NULL AND (l.control_id IS NULL OR l.control_id = h.control_id)
       RETURNING l.id),
calls_ring_turned AS (UPDATE calls c SET ring_plan = h.next_plan, updated_at = now()
         FROM call_legs_first h JOIN call_legs_handed_off e ON e.id = h.leg_id
        WHERE c.id = h.call_id AND c.status = 'ringing' AND c.ended_at IS NULL AND c.ring_plan = h.expected_plan
       RETURNING c.id AS call_id),
call_legs_dialed AS (INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status)
       SELECT h.new_leg_id, h.call_id, h.new_target, h.new_attempt, h.new_to, 'dialing' FROM call_legs_first h JOIN calls_ring_turned t ON t.call_id = h.call_id
        WHERE h.new_leg_id IS NOT NULL
       ON CONFLICT DO NOTHING RETURNING id),
call_hand_off_commands AS (SELECT h.call_id, h.batch, h.commands FROM call_legs_first h JOIN calls_ring_turned t ON t.call_id = h.call_id
        WHERE h.commands IS NOT NULL AND (h.new_leg_id IS NULL OR EXISTS (SELECT FROM call_legs_dialed a WHERE a.id = h.new_leg_id))),
call_commands_queued AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'cmd-' || batch, 'calls', 'call-commands', jsonb_build_object('callId', call_id, 'commands', commands), now() + make_interval(secs => $10::int) FROM call_hand_off_commands
        WHERE outbox_job_twin('cmd-' || batch) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name, data),
call_commands_first_sends AS MATERIALIZED (SELECT q.job_id, jsonb_build_object('firstSend', jsonb_build_object('firstSentAt', s.first_sent_at, 'sends', s.sends)) AS prefetched
           FROM call_commands_queued q CROSS JOIN LATERAL call_command_send(q.data->'commands'->0->>'commandId', q.data->>'callId') s)
SELECT (SELECT coalesce(jsonb_agg(job_id), '[]'::jsonb) FROM job_claimed) AS claimed, (SELECT coalesce(jsonb_agg(i.job_id), '[]'::jsonb) FROM evt_input i WHERE NOT EXISTS (SELECT FROM evt_ready r WHERE r.event_id = i.event_id)) AS unready,
                  (0)::int AS jobs, (SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id, 'prefetched', p.prefetched) || CASE WHEN a.payload IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('payload', a.payload) END), '[]'::jsonb)
               FROM (SELECT name, job_id, data AS payload FROM call_commands_queued) AS a LEFT JOIN (SELECT job_id, prefetched FROM call_commands_first_sends) AS p ON p.job_id = a.job_id) AS "afterCommit";
