-- The dispatch claims a queued message and its send slot on its number (pacing), or fails it when the handset opted out since
-- Written in src/modules/messaging/dispatch-claims.ts (claimStatement); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH locked AS (SELECT m.id AS locked_id, m.status AS previous, m.claim_token AS holder, m.claimed_until AS held_until, m.send_slot AS held_slot, p.id AS number_id,
              m.outcome_unknown_since AS was_unknown,
              p.opt_out_seq AS seen_seq, m.segments AS msg_segments, m.from_number AS sender_number, m.account_id AS sender_account,
              make_interval(secs => (m.segments / coalesce(p.send_rate_per_second, $4::numeric, CASE p.carrier WHEN 'telnyx' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 20 ELSE 1 END WHEN 'twilio' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END WHEN 'vonage' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END ELSE 1 END)::numeric)::float8) AS unlocked_spacing, make_interval(secs => greatest(0, 0.5 - 1.0 / coalesce(p.send_rate_per_second, $4::numeric, CASE p.carrier WHEN 'telnyx' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 20 ELSE 1 END WHEN 'twilio' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END WHEN 'vonage' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END ELSE 1 END)::numeric)::float8) AS unlocked_burst,
              (m.auto_reply IS NULL AND (m.status = ANY($3::text[]) OR (m.status = 'sending' AND m.claimed_until IS NULL AND m.outcome_unknown_since IS NULL)) AND EXISTS (SELECT FROM message_opt_outs o JOIN accounts oa ON oa.id = o.account_id
                   WHERE o.account_id = m.account_id AND o.handset = m.to_number AND o.opted_out
                     AND o.our_number = CASE oa.opt_out_scope WHEN 'account' THEN '*' ELSE m.from_number END)) AS refused,
              (m.status = 'sending' AND (m.claimed_until IS NULL OR m.claimed_until <= now())) AS reclaim, m.auto_reply IS NOT NULL AS priority
         FROM messages m LEFT JOIN phone_numbers p ON p.phone_number = m.from_number AND p.account_id = m.account_id AND p.status IN ('ordering', 'active', 'releasing')
        WHERE m.id = $1::text AND onceline_id_key(m.id) = onceline_id_key_of($1::text) AND m.direction = 'outbound' AND m.status = ANY($2::text[]) FOR UPDATE OF m SKIP LOCKED),
num AS (SELECT p.id AS num_id, p.next_send_at, p.send_paused_until, p.sends_paced_until, p.opt_out_seq AS locked_seq,
              make_interval(secs => (l.msg_segments / coalesce(p.send_rate_per_second, $4::numeric, CASE p.carrier WHEN 'telnyx' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 20 ELSE 1 END WHEN 'twilio' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END WHEN 'vonage' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END ELSE 1 END)::numeric)::float8) AS spacing, make_interval(secs => greatest(0, 0.5 - 1.0 / coalesce(p.send_rate_per_second, $4::numeric, CASE p.carrier WHEN 'telnyx' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 20 ELSE 1 END WHEN 'twilio' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END WHEN 'vonage' THEN CASE WHEN p.phone_number ~ '^\+1(800|833|844|855|866|877|888)' THEN 3 ELSE 1 END ELSE 1 END)::numeric)::float8) AS burst
         FROM phone_numbers p JOIN locked l ON p.id = l.number_id
        WHERE (l.previous = ANY($3::text[]) OR l.reclaim) AND (NOT l.refused OR l.held_slot IS NOT NULL) FOR UPDATE OF p),
paced AS (SELECT d.*, (NOT d.refused AND NOT d.consent_changed AND d.due AND d.within_burst AND NOT d.yields AND (d.previous = ANY($3::text[]) OR d.reclaim)) AS may_send,
              (d.refused AND NOT d.consent_changed AND d.num_id IS NOT NULL AND d.held_slot IS NOT NULL) AS gives_back
         FROM (SELECT l.*, n.num_id, n.sends_paced_until, n.send_paused_until AS paused_until, r.spacing, r.burst, x.new_slot, k.keeps_place, y.yields, c.clk, b.within_burst,
                      coalesce(x.new_slot, l.held_slot) AS slot_at, coalesce(n.locked_seq <> l.seen_seq, false) AS consent_changed,
                      (coalesce(x.new_slot, l.held_slot) IS NULL OR (coalesce(x.new_slot, l.held_slot) <= c.clk + r.burst AND NOT coalesce(n.send_paused_until > c.clk, false))) AS due
                 FROM locked l LEFT JOIN num n ON true
                 CROSS JOIN LATERAL (SELECT clock_timestamp() AS clk) c
                 CROSS JOIN LATERAL (SELECT coalesce(n.spacing, l.unlocked_spacing) AS spacing, coalesce(n.burst, l.unlocked_burst) AS burst) r
                 CROSS JOIN LATERAL (SELECT n.num_id IS NULL OR greatest(n.sends_paced_until, c.clk) <= c.clk + r.burst AS within_burst) b
                 CROSS JOIN LATERAL (
                   SELECT coalesce(l.previous = ANY($3::text[]) AND NOT l.priority AND n.num_id IS NOT NULL AND l.held_slot <= c.clk + r.burst
                                   AND NOT coalesce(n.send_paused_until > c.clk, false)
                                   AND EXISTS (SELECT FROM messages q
                                                WHERE q.from_number = l.sender_number AND q.account_id = l.sender_account AND q.direction = 'outbound'
                                                  AND q.status IN ('queued', 'scheduled') AND q.id <> l.locked_id
                                                  AND q.send_slot > l.held_slot - r.spacing AND q.send_slot < l.held_slot + r.spacing / 2
                                                  AND (q.auto_reply IS NOT NULL OR q.id COLLATE "C" < l.locked_id COLLATE "C")), false) AS yields
                 ) y
                 CROSS JOIN LATERAL (
                   SELECT coalesce(l.previous = ANY($3::text[]) AND NOT b.within_burst AND l.held_slot <= c.clk + r.burst AND l.held_slot >= n.sends_paced_until - r.burst - 1.5 * r.spacing
                                   AND NOT coalesce(l.held_slot < n.send_paused_until, false), false) AS keeps_place
                 ) k
                 CROSS JOIN LATERAL (
                   SELECT CASE WHEN n.num_id IS NOT NULL AND NOT l.refused AND n.locked_seq = l.seen_seq AND y.yields
                               THEN CASE WHEN b.within_burst THEN greatest(l.held_slot + r.spacing, c.clk + r.spacing / 2)
                                         ELSE greatest(n.send_paused_until, n.sends_paced_until - r.burst) END
                               WHEN n.num_id IS NOT NULL AND NOT l.refused AND n.locked_seq = l.seen_seq
                                    AND (l.held_slot IS NULL OR l.held_slot < n.send_paused_until OR (l.held_slot <= c.clk + r.burst AND NOT b.within_burst))
                               THEN greatest(CASE WHEN NOT l.priority AND NOT k.keeps_place THEN n.next_send_at END, n.send_paused_until, c.clk, n.sends_paced_until - r.burst) END AS new_slot
                 ) x) d),
num_moved AS (UPDATE phone_numbers p SET next_send_at = CASE WHEN pc.new_slot IS NOT NULL AND NOT pc.keeps_place AND NOT pc.yields THEN greatest(p.next_send_at, pc.new_slot) + pc.spacing
                                                      WHEN pc.gives_back AND p.next_send_at > pc.held_slot THEN p.next_send_at - pc.spacing
                                                      ELSE p.next_send_at END,
              sends_paced_until = CASE WHEN pc.may_send THEN greatest(pc.sends_paced_until, greatest(coalesce(pc.slot_at, pc.clk), pc.clk - least(make_interval(secs => 0.05), pc.spacing / 4))) + pc.spacing ELSE p.sends_paced_until END
         FROM paced pc WHERE p.id = pc.num_id AND (pc.new_slot IS NOT NULL OR pc.may_send OR pc.gives_back)
       RETURNING p.sends_paced_until AS paced_until_after),
freed_next AS (SELECT q.id AS succ_id, least(q.send_slot - pc.spacing, greatest(pc.held_slot, pc.clk, pc.sends_paced_until - pc.burst, pc.paused_until)) AS target
         FROM messages q, paced pc
        WHERE q.id = (SELECT q.id FROM messages q WHERE q.from_number = (SELECT sender_number FROM paced) AND q.account_id = (SELECT sender_account FROM paced)
          AND q.direction = 'outbound' AND q.status IN ('queued', 'scheduled') AND q.id <> (SELECT locked_id FROM paced) AND (SELECT gives_back FROM paced) AND q.send_slot > (SELECT held_slot FROM paced)
                        ORDER BY q.send_slot, q.id LIMIT 1 FOR UPDATE OF q SKIP LOCKED)),
sent_next AS (SELECT q.id AS succ_id, greatest(nm.paced_until_after, pc.paused_until) AS target
         FROM messages q, paced pc, num_moved nm
        WHERE q.id = (SELECT q.id FROM messages q WHERE q.from_number = (SELECT sender_number FROM paced) AND q.account_id = (SELECT sender_account FROM paced)
          AND q.direction = 'outbound' AND q.status IN ('queued', 'scheduled') AND q.id <> (SELECT locked_id FROM paced) AND (SELECT may_send FROM paced) AND q.send_slot >= (SELECT slot_at FROM paced)
                        ORDER BY q.send_slot, q.id LIMIT 1)
          AND q.status IN ('queued', 'scheduled') AND q.send_slot > greatest(nm.paced_until_after, pc.paused_until) + pc.spacing / 2
        FOR UPDATE OF q SKIP LOCKED),
pulled AS (UPDATE messages o SET send_slot = s.target
         FROM (SELECT * FROM freed_next UNION ALL SELECT * FROM sent_next) s WHERE o.id = s.succ_id AND s.target < o.send_slot
       RETURNING o.id AS pulled_id, o.send_slot AS pulled_slot, o.auto_reply IS NOT NULL AS pulled_reply),
refused AS (UPDATE messages m SET status = 'failed', error_code = $5::text, error_detail = $6::text,
              claimed_until = NULL, updated_at = now()
         FROM paced WHERE m.id = paced.locked_id AND paced.refused AND NOT paced.consent_changed
       RETURNING id, 'message' AS record_type, direction, from_number AS "from", to_number AS "to", text, status,
  segments, encoding, carrier, carrier_message_id, error_code, error_detail, send_at,
  CASE status WHEN 'scheduled' THEN coalesce(send_slot, send_at) WHEN 'queued' THEN coalesce(send_slot, (SELECT greatest(p.next_send_at, p.send_paused_until, now()) FROM phone_numbers p WHERE p.phone_number = from_number AND p.status IN ('ordering', 'active', 'releasing'))) END AS expected_send_at,
  created_at, updated_at, account_id),
msg_history AS (INSERT INTO message_status_history (message_id, status) SELECT id, $7::text FROM refused),
evt_emitted AS (INSERT INTO outbound_events (id, account_id, type, event_version, payload)
       SELECT onceline_id('evt'), account_id, $8::text, $9::int, jsonb_build_object('id', id, 'record_type', record_type, 'direction', direction, 'from', "from", 'to', "to",
  'text', text, 'status', status, 'segments', segments, 'encoding', encoding, 'carrier', carrier,
  'carrier_message_id', carrier_message_id, 'error_code', error_code, 'error_detail', error_detail,
  'send_at', to_char(send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'expected_send_at', to_char(expected_send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) FROM refused
       RETURNING id, account_id, type, payload, created_at),
dlv_endpoints AS (SELECT w.id AS endpoint_id, w.enabled, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, e.id AS event_id, e.account_id
         FROM evt_emitted e JOIN webhook_endpoints w ON w.account_id = e.account_id
        WHERE w.deleted_at IS NULL AND (w.event_types IS NULL OR $10::text = ANY (w.event_types))
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
       SELECT 'dlv-' || id || '-' || round || '-' || attempt, 'webhooks', 'webhook-delivery-attempt', jsonb_build_object('deliveryId', id, 'eventId', event_id, 'round', round, 'attempt', attempt), now() FROM dlv_first_attempts
       ON CONFLICT DO NOTHING RETURNING job_id, name),
claimed AS (UPDATE messages m SET status = 'sending', claim_token = $11::text, claimed_until = now() + make_interval(secs => $12::int),
              outcome_unknown_since = CASE WHEN paced.reclaim AND paced.held_until IS NOT NULL THEN coalesce(m.outcome_unknown_since, now()) ELSE m.outcome_unknown_since END,
              send_slot = coalesce((SELECT paced_until_after FROM num_moved) - paced.spacing, paced.slot_at, m.send_slot), updated_at = CASE WHEN paced.previous = ANY($3::text[]) THEN now() ELSE m.updated_at END
         FROM paced WHERE m.id = paced.locked_id AND paced.may_send
       RETURNING m.id, m.from_number, m.to_number, m.text, m.carrier, m.claim_token AS token, m.outcome_unknown_since AS unknown_since, paced.clk AS decided_at, paced.previous,
                 (paced.reclaim AND paced.held_until IS NOT NULL AND paced.was_unknown IS NULL) AS became_unknown),
claim_history AS (INSERT INTO message_status_history (message_id, status, detail)
       SELECT id, 'sending', NULL FROM claimed WHERE unknown_since IS NULL
       UNION ALL SELECT id, 'sending', $13::text FROM claimed WHERE became_unknown),
slotted AS (UPDATE messages m SET send_slot = paced.new_slot FROM paced
        WHERE m.id = paced.locked_id AND paced.new_slot > paced.clk AND NOT paced.may_send AND NOT paced.refused
       RETURNING m.id AS slotted_id, m.send_slot AS wake_at),
waking AS (SELECT slotted_id AS message_id, wake_at AS run_at, (SELECT priority FROM paced) AS reply FROM slotted
       UNION ALL SELECT locked_id, held_slot, priority FROM paced
        WHERE paced.new_slot IS NULL AND paced.held_slot > paced.clk AND NOT paced.may_send AND NOT paced.refused AND NOT paced.consent_changed
          AND (paced.previous = ANY($3::text[]) OR paced.reclaim)
       UNION ALL SELECT pulled_id, pulled_slot, pulled_reply FROM pulled),
slotted_job_message_rows AS (SELECT * FROM waking WHERE reply = false),
slotted_job_message AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'dispatch-' || message_id || '-at-' || (extract(epoch FROM run_at) * 1000000)::bigint, 'messaging', 'dispatch-message', jsonb_build_object('messageId', message_id), run_at FROM slotted_job_message_rows
        WHERE outbox_job_twin('dispatch-' || message_id || '-at-' || (extract(epoch FROM run_at) * 1000000)::bigint) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name),
slotted_job_reply_rows AS (SELECT * FROM waking WHERE reply = true),
slotted_job_reply AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'dispatch-' || message_id || '-at-' || (extract(epoch FROM run_at) * 1000000)::bigint, 'messaging-replies', 'dispatch-reply', jsonb_build_object('messageId', message_id), run_at FROM slotted_job_reply_rows
        WHERE outbox_job_twin('dispatch-' || message_id || '-at-' || (extract(epoch FROM run_at) * 1000000)::bigint) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name),
lease_end AS (SELECT locked_id AS message_id, held_until AS run_at, priority AS reply, holder FROM paced WHERE paced.previous = 'sending' AND NOT paced.reclaim),
lease_end_job_message_rows AS (SELECT * FROM lease_end WHERE reply = false),
lease_end_job_message AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'dispatch-' || message_id || '-' || holder, 'messaging', 'dispatch-message', jsonb_build_object('messageId', message_id), run_at FROM lease_end_job_message_rows
        WHERE outbox_job_twin('dispatch-' || message_id || '-' || holder) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name),
lease_end_job_reply_rows AS (SELECT * FROM lease_end WHERE reply = true),
lease_end_job_reply AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT 'dispatch-' || message_id || '-' || holder, 'messaging-replies', 'dispatch-reply', jsonb_build_object('messageId', message_id), run_at FROM lease_end_job_reply_rows
        WHERE outbox_job_twin('dispatch-' || message_id || '-' || holder) IS NULL
       ON CONFLICT DO NOTHING RETURNING job_id, name)
SELECT paced.locked_id, paced.holder, paced.held_until, paced.refused, paced.previous = 'sending' AND NOT paced.reclaim AS lease_live, paced.slot_at, paced.consent_changed,
              EXISTS (SELECT FROM messages WHERE id = $1::text AND direction = 'outbound' AND status = ANY($2::text[])) AS present,
              ((SELECT count(*) FROM dlv_jobs) + (SELECT count(*) FROM slotted_job_message) + (SELECT count(*) FROM slotted_job_reply) + (SELECT count(*) FROM lease_end_job_message) + (SELECT count(*) FROM lease_end_job_reply))::int AS jobs, claimed.*
         FROM (VALUES (1)) AS one (n) LEFT JOIN paced ON true LEFT JOIN claimed ON claimed.id = paced.locked_id;
