-- A call's carrier event read by id under its row lock: the partition key named from the id (one partition)
-- Written in src/modules/ingest/carrier-event-processor.ts (lockEvent); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
SELECT e.normalized, e.attempts, e.processed_at IS NOT NULL AS processed, e.created_at,
              extract(epoch FROM clock_timestamp() - e.created_at)::float8 * 1000 AS age_ms, ARRAY(SELECT p.id FROM carrier_events p
                WHERE p.normalized ? 'callSessionId' AND p.normalized->>'callSessionId' = e.normalized->>'callSessionId' AND p.processed_at IS NULL
          AND p.attempts = 0 AND p.error IS NULL AND p.unhandled_since IS NULL AND (p.created_at, p.id) < (e.created_at, e.id)
                ORDER BY p.created_at, p.id LIMIT 50) AS earlier
         FROM carrier_events e WHERE e.id = $1 AND e.created_at BETWEEN onceline_id_window_start($1) AND onceline_id_window_end($1) FOR UPDATE;
