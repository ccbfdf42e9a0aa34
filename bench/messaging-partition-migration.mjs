// Migrations 0044-0047 (issue 44, phase 2) on a database holding messages and customer webhooks
// (`npm run bench:messaging-migration`, which builds first). Loopback only, bounded in time.
// Figures for docs/retention.md, *Migrating messages and customer webhooks*.
//
// A database migrated up to 0043, filled with BENCH_MESSAGES messages (three history rows each)
// and BENCH_EVENTS customer events (one delivery and one attempt each), then each of 0044-0047
// applied in its own transaction as `onceline migrate` does: its wall time, and how long it held
// the lock that blocks the app (0044, 0046, 0047: ACCESS EXCLUSIVE for the whole transaction;
// 0045: only SHARE UPDATE EXCLUSIVE, reads and writes go on during its scans). Also how many
// sequential scans of each old table the swap made (the valid CHECK should spare ATTACH its scan:
// 1 is the one-page EXISTS probe of onceline_partition_legacy).
//
// By default on a private PostgreSQL cluster (bench/private-pg.mjs, the shared server's speed
// settings); BENCH_PRIVATE_PG=0 uses a scratch database of BENCH_PG_BASE (127.0.0.1:5432).
import { fmt, machine } from './lib.mjs';
import { applyMigration, giveUpAfter, migrationFiles, scratchDatabase } from './scratch-pg.mjs';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 200_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const PHASE_2 = ['0044', '0045', '0046', '0047'];
const TABLES = ['messages', 'message_status_history', 'outbound_events', 'webhook_deliveries', 'webhook_delivery_attempts'];

giveUpAfter('messaging-partition-migration', Number(process.env.BENCH_MAX_SECONDS ?? 900));
const db = await scratchDatabase('onceline_bench_mmig', { before: PHASE_2[0] });
try {
  const q = (sql, params) => db.client.query(sql, params);

  // Rows as the app writes them: ids minted by onceline_id(), created_at now().
  const started = performance.now();
  await q(`INSERT INTO accounts (id, name) VALUES ('acct_bench', 'bench')`);
  await q(
    `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
     SELECT onceline_id('msg'), 'acct_bench', 'outbound', '+15550100000', '+15550100001', 'a message of a bench ' || n, 'delivered', 1, 'GSM-7', 'telnyx', gen_random_uuid()::text
       FROM generate_series(1, $1) n`,
    [MESSAGES],
  );
  await q(`INSERT INTO message_status_history (message_id, status) SELECT id, s FROM messages, unnest(ARRAY['queued', 'sending', 'delivered']) s`);
  await q(
    `INSERT INTO outbound_events (id, account_id, type, event_version, payload)
     SELECT onceline_id('evt'), 'acct_bench', 'message.delivered', 1, jsonb_build_object('id', 'msg_' || n, 'text', 'a message of a bench ' || n) FROM generate_series(1, $1) n`,
    [EVENTS],
  );
  await q(`INSERT INTO webhook_endpoints (id, account_id, url, secret) VALUES ('we_bench', 'acct_bench', 'https://example.com/hook', 'whsec_x')`);
  await q(`INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, attempt_count, delivered_at) SELECT onceline_id('dlv'), id, 'we_bench', 'acct_bench', 'delivered', 1, now() FROM outbound_events`);
  await q(`INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status_code, duration_ms, at) SELECT id, 1, 200, 12, now() FROM webhook_deliveries`);
  await q('VACUUM ANALYZE');
  const filled = performance.now() - started;
  const sizes = [];
  for (const table of TABLES) {
    const { rows } = await q(`SELECT count(*)::bigint AS n, pg_total_relation_size($1::regclass) AS bytes FROM ${table}`, [table]);
    sizes.push(`${table} ${rows[0].n} rows ${fmt(Number(rows[0].bytes) / 1024 / 1024, 1)} MB`);
  }
  // This backend's counters reach pg_stat_user_tables when flushed (at most once a second otherwise).
  const flushStats = async () => {
    await q('SELECT pg_stat_force_next_flush()');
    await q('SELECT 1');
    await q('SELECT pg_stat_clear_snapshot()');
  };
  await flushStats();
  const seqScans = async () => Object.fromEntries((await q(`SELECT relname, seq_scan FROM pg_stat_user_tables WHERE relname = ANY ($1)`, [TABLES.map((t) => `${t}_legacy`).concat(TABLES)])).rows.map((r) => [r.relname, Number(r.seq_scan)]));
  const scansBefore = await seqScans();

  const lines = [];
  for (const file of migrationFiles(PHASE_2)) {
    const ms = await applyMigration(db.client, file);
    lines.push(`  ${file}: ${fmt(ms, 0)} ms${file.startsWith('0045') ? ' (SHARE UPDATE EXCLUSIVE: the app reads and writes meanwhile)' : ' (ACCESS EXCLUSIVE on its tables, the whole transaction)'}`);
  }
  // Scans of each old table made by 0044-0047.
  await flushStats();
  const scansAfter = await seqScans();
  const swapScans = TABLES.map((t) => `${t} ${(scansAfter[`${t}_legacy`] ?? 0) - (scansBefore[t] ?? 0)}`).join(', ');

  console.log(`messaging-partition-migration on ${db.where}; ${machine()}`);
  console.log(`BENCH_MESSAGES=${MESSAGES} BENCH_EVENTS=${EVENTS}: filled in ${fmt(filled / 1000, 1)} s: ${sizes.join('; ')}`);
  for (const line of lines) console.log(line);
  console.log(`  sequential scans of each old table by 0044-0047 (0045's VALIDATE is one, 0046/0047's one-page EXISTS probe another): ${swapScans}`);
} finally {
  await db.close();
}
