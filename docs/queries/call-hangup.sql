-- A call ends once: status, duration, billable minutes
-- Written in src/modules/calls/call-transitions.ts (end, endSetSql); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
UPDATE calls c SET status = CASE WHEN c.status = 'in_progress' OR (c.status = 'ringing' AND (c.answered_at IS NOT NULL OR coalesce($4::int, 0) > 0)) THEN 'completed' WHEN c.status = 'ringing' AND $5 THEN 'failed' WHEN c.status = 'ringing' THEN 'missed' ELSE c.status END,
              ended_at = $2::timestamptz, hangup_cause = $3, updated_at = now(),
              answered_at = coalesce(c.answered_at, CASE WHEN $4::int > 0 THEN $2::timestamptz - make_interval(secs => $4::int) END),
              duration_seconds = CASE WHEN (c.answered_at IS NOT NULL OR coalesce($4::int, 0) > 0) THEN coalesce($4::int, CASE WHEN c.answered_at IS NULL THEN 0 ELSE greatest(0, round(extract(epoch FROM $2::timestamptz - c.answered_at)))::int END) ELSE 0 END,
              billable_minutes = CASE WHEN (c.answered_at IS NOT NULL OR coalesce($4::int, 0) > 0) THEN greatest(1, ceil(coalesce($4::int, CASE WHEN c.answered_at IS NULL THEN 0 ELSE greatest(0, round(extract(epoch FROM $2::timestamptz - c.answered_at)))::int END) / 60.0))::int ELSE 0 END
        WHERE id = $1 AND created_at BETWEEN onceline_id_window_start($1) AND onceline_id_window_end($1) AND ended_at IS NULL
       RETURNING id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, ring_plan,
  answered_leg, answered_at, bridged_at, ended_at, duration_seconds, billable_minutes, hangup_cause, transcribe, voicemail_url, transcript, created_at;
