-- A carrier webhook stored once (no twin in any partition, under the key lock) with its processing job
-- Written in src/modules/ingest/carrier-event-writer.ts; captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
WITH inserted AS (INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce, created_at)
       SELECT id, carrier, carrier_event_id, event_type, kind, payload::jsonb, normalized::jsonb, signature_nonce, onceline_id_time(id)
         FROM json_to_recordset($1::json)
              AS e(id text, carrier text, carrier_event_id text, event_type text, kind text, payload text, normalized text, signature_nonce text, twin_since timestamptz)
        WHERE carrier_event_twin(carrier, carrier_event_id, signature_nonce, twin_since) IS NULL
       ON CONFLICT DO NOTHING
       RETURNING id),
jobs AS (INSERT INTO outbox_jobs (job_id, queue, name, data, run_at)
       SELECT id, 'carrier-events', 'process-carrier-event', jsonb_build_object('carrierEventId', id), now() + make_interval(secs => $2::int) FROM inserted
       ON CONFLICT DO NOTHING RETURNING job_id, name)
SELECT id, (0)::int AS jobs, (SELECT coalesce(jsonb_agg(jsonb_build_object('name', a.name, 'jobId', a.job_id)), '[]'::jsonb) FROM (SELECT name, job_id, NULL::jsonb AS payload FROM jobs) AS a) AS "afterCommit" FROM inserted;
