// Issue 44 phase 2 on a database that already holds data (`npm run bench:partition-migration`,
// which builds first): the usage ledger and the call history in the old shape, then migrations
// 0050-0055 applied one by one, each in its own transaction as `onceline migrate` applies them.
// Prints each migration's wall time (the time its locks are held: ACCESS EXCLUSIVE on the tables
// it renames or bounds, SHARE UPDATE EXCLUSIVE for the VALIDATE scans) and the tables' sizes, for
// docs/retention.md (*Phase 2*). BENCH_USAGE usage rows; BENCH_CALLS calls, each with 2 legs, 4
// timeline entries, 2 transcript fragments and 3 command sends.
//
// By default on a private PostgreSQL cluster (bench/private-pg.mjs); BENCH_PRIVATE_PG=0 uses a
// scratch database of BENCH_PG_BASE (127.0.0.1:5432). Loopback only, bounded in time.
import { machine } from './lib.mjs';
import { applyMigration, giveUpAfter, migrationFiles, scratchDatabase } from './scratch-pg.mjs';

const USAGE = Number(process.env.BENCH_USAGE ?? 500_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 100_000);
const PHASE_2 = ['0050', '0051', '0052', '0053', '0054', '0055'];

giveUpAfter('partition-migration', Number(process.env.BENCH_MAX_SECONDS ?? 900));
const db = await scratchDatabase('onceline_bench_mig2', { before: PHASE_2[0] });
try {
  const q = (sql, params) => db.client.query(sql, params);
  await q(`INSERT INTO accounts (id, name) VALUES ('acc_bench', 'bench')`);
  const filled = Date.now();
  await q(
    `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause, created_at)
     SELECT 'use_' || i, 'acc_bench', 'sms_inbound_segments', 'msg_' || i, 1, 4000, 4000,
            jsonb_build_object('resource', jsonb_build_object('type', 'message', 'id', 'msg_' || i), 'carrier_events', '[]'::jsonb, 'legacy', false,
                               'price_rule', jsonb_build_object('unit', 'segment', 'quantity', 1, 'unit_price_micros', 4000)),
            now() - make_interval(secs => i % 2592000)
       FROM generate_series(1, $1::int) AS i`,
    [USAGE],
  );
  // Call ids of ours (onceline_id), minted in time order: their history is keyed by their time.
  await q(
    `INSERT INTO calls (id, account_id, direction, from_number, to_number, status, carrier, carrier_call_id, caller_control_id, answered_at, ended_at, duration_seconds, billable_minutes)
     SELECT onceline_id('call'), 'acc_bench', 'inbound', '+13125550100', '+13125550101', 'completed', 'telnyx', 'session-' || i, 'v3:caller-' || i, now(), now(), 60, 1
       FROM generate_series(1, $1::int) AS i`,
    [CALLS],
  );
  await q(`INSERT INTO call_legs (id, call_id, target_index, attempt, to_number, status) SELECT onceline_id('leg'), c.id, t, 1, '+13125550102', 'ended' FROM calls c, generate_series(0, 1) t`);
  await q(`INSERT INTO call_timeline (call_id, carrier_event_id, event_type, outcome, occurred_at, received_at)
           SELECT c.id, onceline_id('cev'), 'call.hangup', 'applied', now(), now() FROM calls c, generate_series(1, 4)`);
  await q(`INSERT INTO call_transcript_fragments (call_id, occurred_at, text) SELECT c.id, now() + make_interval(secs => n), 'words words words' FROM calls c, generate_series(1, 2) n`);
  await q(`INSERT INTO call_command_sends (command_id, call_id) SELECT c.id || '-' || n, c.id FROM calls c, generate_series(1, 3) n`);
  await q('VACUUM ANALYZE');
  const sizes = (await q(
    `SELECT relname AS t, pg_size_pretty(pg_total_relation_size(oid)) AS size, reltuples::bigint AS rows FROM pg_class
      WHERE relname IN ('usage_records', 'calls', 'call_legs', 'call_timeline', 'call_transcript_fragments', 'call_command_sends') ORDER BY relname`,
  )).rows;
  process.stdout.write(`partition-migration: ${machine()}; ${db.where}; filled in ${((Date.now() - filled) / 1000).toFixed(1)} s\n`);
  process.stdout.write(`  before: ${sizes.map((s) => `${s.t} ${s.size} (${s.rows} rows)`).join(', ')}\n`);
  for (const file of migrationFiles(PHASE_2)) process.stdout.write(`  ${file}: ${(await applyMigration(db.client, file)).toFixed(0)} ms\n`);
} finally {
  await db.close();
}
