-- The ring plan's compare-and-set: the next target is dialed once
-- Written in src/modules/calls/call-transitions.ts (claimRingTurn); captured by test/docs/queries.test.ts. Regenerate: npm run docs:queries
UPDATE calls SET ring_plan = $3::jsonb, updated_at = now()
        WHERE id = $1 AND created_at BETWEEN onceline_id_window_start($1) AND onceline_id_window_end($1) AND status = 'ringing' AND ended_at IS NULL AND ring_plan = $2::jsonb;
