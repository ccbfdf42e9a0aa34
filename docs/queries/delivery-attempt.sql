-- A customer webhook delivery attempt recorded (the attempt claims its delivery)
-- Written in src/modules/webhooks/attempt-records.ts; captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH dlv_outcomes AS (SELECT * FROM json_to_recordset($1::json)
       AS o(id text, round int, attempt int, status text, next_at timestamptz, error text, status_code int, duration_ms int, excerpt text, at timestamptz)),
dlv_recorded AS (UPDATE webhook_deliveries d
        SET attempt_count = o.attempt,
            status = CASE WHEN o.status = 'delivered' OR d.status = 'pending' THEN o.status ELSE d.status END,
            next_attempt_at = CASE WHEN d.status = 'pending' THEN o.next_at ELSE NULL END,
            delivered_at = CASE WHEN o.status = 'delivered' THEN now() ELSE d.delivered_at END,
            failed_at = CASE WHEN o.status = 'failed' AND d.status = 'pending' THEN now() ELSE d.failed_at END,
            parked_at = CASE WHEN o.status = 'delivered' THEN NULL ELSE d.parked_at END,
            last_error = o.error, updated_at = now()
       FROM dlv_outcomes o
      WHERE d.id = ANY ($2::text[]) AND onceline_id_key(d.event_id) BETWEEN onceline_id_key_of($3::text) AND onceline_id_key_of($4::text) AND d.id = o.id
        AND d.round = o.round AND d.attempt_count = o.attempt - 1 AND d.status IN ('pending', 'parked')
      RETURNING d.id, d.status, d.endpoint_id, o.attempt, o.status_code, o.error, o.duration_ms, o.excerpt, o.at),
dlv_attempt_rows AS (INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status_code, error, duration_ms, response_excerpt, at)
     SELECT id, attempt, status_code, error, duration_ms, excerpt, at FROM dlv_recorded),
we_healthy AS (UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE id IN (SELECT endpoint_id FROM dlv_recorded) AND consecutive_failures > 0),
jobs_done AS (UPDATE outbox_jobs SET completed_at = now(), attempts = attempts + 1, relayed_at = coalesce(relayed_at, now()) WHERE job_id = ANY ($5::text[]) AND completed_at IS NULL RETURNING 1)
SELECT 1;
