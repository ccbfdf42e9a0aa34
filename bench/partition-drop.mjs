// Retention by deleting rows vs by dropping a time partition (`npm run bench:partitions`, which
// builds first). Loopback only, bounded in time. Figures for docs/scaling.md.
//
// Two copies of carrier_events (the migrated table's columns, a real Telnyx body as payload):
// `ce_plain`, unpartitioned with carrier_events' own indexes, and `ce_parted`, PARTITION BY RANGE
// (created_at) with the same indexes (each unique one widened by created_at, as PostgreSQL
// requires). Each holds BENCH_ROWS old rows (10 days ago) and BENCH_ROWS/10 current ones.
//  1. DELETE the old rows in batches of 5000, as the relay's retention deletes outbox_jobs today
//     (OutboxRelay.cleanFinished), then the VACUUM that makes their space reusable.
//  2. DETACH PARTITION ... CONCURRENTLY + DROP TABLE of the partition holding the same rows.
//  For each: wall time, WAL bytes (pg_current_wal_lsn before/after, after a CHECKPOINT), and
//  the table's size on disk after.
//  3. Lookup by job_id (the runner's `WHERE job_id = $1`) on outbox_jobs-shaped tables: one
//     table vs BENCH_PARTITIONS daily partitions, the unique job_id index then per partition.
//  4. The oldest day of those: batched DELETE vs DETACH + DROP of its partition.
//
// By default on a private PostgreSQL cluster (bench/private-pg.mjs: initdb in a temp dir, a free
// port on 127.0.0.1, the shared server's speed settings), so the WAL figures are this benchmark's
// alone; BENCH_PRIVATE_PG=0 runs it on a scratch database of BENCH_PG_BASE (127.0.0.1:5432)
// instead, whose WAL then includes whatever else writes meanwhile.
import { readFileSync } from 'node:fs';
import { fmt, machine } from './lib.mjs';
import { giveUpAfter, scratchDatabase } from './scratch-pg.mjs';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 8);
const LOOKUPS = Number(process.env.BENCH_LOOKUPS ?? 5000);
const BATCH = 5000;
const PAYLOAD = readFileSync(new URL('../test/fixtures/carriers/telnyx/message.received.json', import.meta.url), 'utf8');

giveUpAfter('partition-drop', Number(process.env.BENCH_MAX_SECONDS ?? 600));
// A scratch database, for carrier_events' and outbox_jobs' definitions.
const db = await scratchDatabase('onceline_bench_part');
try {
  const q = (sql, params) => db.client.query(sql, params);

  /** Runs fn after a CHECKPOINT; returns its wall time (ms) and the WAL it wrote (bytes). */
  async function measure(fn) {
    await q('CHECKPOINT');
    const before = (await q('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn;
    const started = performance.now();
    await fn();
    const ms = performance.now() - started;
    const { bytes } = (await q('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint AS bytes', [before])).rows[0];
    return { ms, walBytes: Number(bytes) };
  }
  // Heap, indexes and TOAST; of every partition for a partitioned table.
  const size = async (table) =>
    Number((await q(`SELECT coalesce(sum(pg_total_relation_size(relid)), pg_total_relation_size($1::regclass)) AS s FROM pg_partition_tree($1::regclass)`, [table])).rows[0].s);

  // carrier_events' columns and defaults; its indexes, each unique one widened by the partition key.
  // (carrier_events is partitioned since #44: its parent holds only the non-unique indexes, so the
  // one table's unique ones are named here, as migration 0002 made them.)
  await q(`CREATE TABLE ce_plain (LIKE carrier_events INCLUDING ALL, PRIMARY KEY (id), UNIQUE (carrier, carrier_event_id))`);
  await q(`CREATE UNIQUE INDEX ON ce_plain (carrier, signature_nonce) WHERE signature_nonce IS NOT NULL`);
  await q(`CREATE TABLE ce_parted (LIKE carrier_events INCLUDING DEFAULTS, PRIMARY KEY (id, created_at), UNIQUE (carrier, carrier_event_id, created_at)) PARTITION BY RANGE (created_at)`);
  await q(`CREATE UNIQUE INDEX ON ce_parted (carrier, signature_nonce, created_at) WHERE signature_nonce IS NOT NULL`);
  await q(`CREATE INDEX ON ce_parted (created_at) WHERE processed_at IS NULL AND error IS NOT NULL`);
  await q(`CREATE INDEX ON ce_parted (created_at) WHERE processed_at IS NULL AND unhandled_since IS NOT NULL`);
  await q(`CREATE TABLE ce_parted_old PARTITION OF ce_parted FOR VALUES FROM (now() - interval '30 days') TO (now() - interval '1 day')`);
  await q(`CREATE TABLE ce_parted_new PARTITION OF ce_parted FOR VALUES FROM (now() - interval '1 day') TO (now() + interval '1 day')`);
  const fill = (table, n, age) =>
    q(
      `INSERT INTO ${table} (id, carrier, carrier_event_id, event_type, kind, payload, normalized, processed_at, created_at)
       SELECT 'cev_' || $4 || g, 'telnyx', gen_random_uuid()::text, 'message.received', 'message.received', $1::jsonb, $1::jsonb,
              now() - $2::interval, now() - $2::interval
         FROM generate_series(1, $3) g`,
      [PAYLOAD, age, n, age.replace(/\W/g, '')],
    );
  for (const table of ['ce_plain', 'ce_parted']) {
    await fill(table, ROWS, '10 days');
    await fill(table, Math.ceil(ROWS / 10), '1 minute');
  }
  await q('VACUUM ANALYZE ce_plain');
  await q('VACUUM ANALYZE ce_parted');
  const plainBefore = await size('ce_plain');
  const partedBefore = await size('ce_parted');

  const cutoff = `now() - interval '5 days'`;
  let deleted = 0;
  const del = await measure(async () => {
    for (;;) {
      const { rowCount } = await q(`DELETE FROM ce_plain WHERE id IN (SELECT id FROM ce_plain WHERE created_at < ${cutoff} LIMIT ${BATCH})`);
      deleted += rowCount;
      if (rowCount === 0) break;
    }
  });
  const plainAfterDelete = await size('ce_plain');
  const vac = await measure(() => q('VACUUM ce_plain'));
  const plainAfterVacuum = await size('ce_plain');

  const inOld = Number((await q('SELECT count(*) AS n FROM ce_parted_old')).rows[0].n);
  const drop = await measure(async () => {
    // CONCURRENTLY: no ACCESS EXCLUSIVE lock on the parent, so ingest keeps inserting meanwhile.
    await q('ALTER TABLE ce_parted DETACH PARTITION ce_parted_old CONCURRENTLY');
    await q('DROP TABLE ce_parted_old');
  });
  const partedAfterDrop = await size('ce_parted');
  if (deleted !== ROWS || inOld !== ROWS) throw new Error(`expected ${ROWS} old rows, deleted ${deleted}, partition held ${inOld}`);

  // 3. Lookups by job_id: outbox_jobs' shape, one table vs PARTITIONS daily partitions.
  const perPartition = Math.ceil(ROWS / PARTITIONS);
  await q(`CREATE TABLE jobs_plain (LIKE outbox_jobs INCLUDING DEFAULTS INCLUDING INDEXES, PRIMARY KEY (id), UNIQUE (job_id))`);
  await q(`CREATE TABLE jobs_parted (LIKE outbox_jobs INCLUDING DEFAULTS, UNIQUE (job_id, created_at)) PARTITION BY RANGE (created_at)`);
  // Day d (0 = today) holds [anchor - (d+1) days, anchor - d days); today's ends tomorrow.
  const anchor = (await q('SELECT now() AS t')).rows[0].t;
  const day = (d) => new Date(anchor.getTime() - d * 86_400_000).toISOString();
  for (let d = 0; d < PARTITIONS; d++) {
    await q(`CREATE TABLE jobs_parted_${d} PARTITION OF jobs_parted FOR VALUES FROM ('${day(d + 1)}') TO ('${day(d === 0 ? -1 : d)}')`);
  }
  for (const table of ['jobs_plain', 'jobs_parted']) {
    await q(
      `INSERT INTO ${table} (job_id, queue, name, data, created_at)
       SELECT 'job-' || g, 'ingest', 'process-carrier-event', '{}'::jsonb, $3::timestamptz - make_interval(days => g % $2, mins => 1)
         FROM generate_series(1, $1) g`,
      [perPartition * PARTITIONS, PARTITIONS, anchor],
    );
    await q(`VACUUM ANALYZE ${table}`);
  }
  async function lookups(table) {
    const started = performance.now();
    for (let i = 0; i < LOOKUPS; i++) {
      const id = `job-${1 + Math.floor(Math.random() * perPartition * PARTITIONS)}`;
      const { rowCount } = await q(`SELECT data FROM ${table} WHERE job_id = $1 AND completed_at IS NULL`, [id]);
      if (rowCount !== 1) throw new Error(`${table}: ${id} not found`);
    }
    return ((performance.now() - started) * 1000) / LOOKUPS;
  }
  await lookups('jobs_plain'); // warm both the same way
  await lookups('jobs_parted');
  const plainLookupUs = await lookups('jobs_plain');
  const partedLookupUs = await lookups('jobs_parted');
  const plan = (await q(`EXPLAIN (COSTS OFF) SELECT data FROM jobs_parted WHERE job_id = 'job-1' AND completed_at IS NULL`)).rows.length;

  // 4. The oldest day of outbox_jobs' shape: batched DELETE vs DETACH + DROP of its partition.
  const oldest = `jobs_parted_${PARTITIONS - 1}`;
  const dayRows = Number((await q(`SELECT count(*) AS n FROM ${oldest}`)).rows[0].n);
  const jobsDel = await measure(async () => {
    let n;
    do {
      ({ rowCount: n } = await q(`DELETE FROM jobs_plain WHERE id IN (SELECT id FROM jobs_plain WHERE created_at < $1 LIMIT ${BATCH})`, [day(PARTITIONS - 1)]));
    } while (n > 0);
  });
  const jobsDrop = await measure(async () => {
    await q(`ALTER TABLE jobs_parted DETACH PARTITION ${oldest} CONCURRENTLY`);
    await q(`DROP TABLE ${oldest}`);
  });

  const mb = (b) => fmt(b / 2 ** 20);
  const lines = [
    `partition-drop: ${ROWS} old rows of carrier_events' shape (a ${PAYLOAD.length}-byte Telnyx body as payload and normalized), ${Math.ceil(ROWS / 10)} current; ${db.where}, ${(await q('SHOW server_version')).rows[0].server_version}; ${machine()}`,
    `  DELETE in batches of ${BATCH}: ${fmt(del.ms, 0)} ms, WAL ${mb(del.walBytes)} MiB; table ${mb(plainBefore)} -> ${mb(plainAfterDelete)} MiB on disk`,
    `  then VACUUM:                 ${fmt(vac.ms, 0)} ms, WAL ${mb(vac.walBytes)} MiB; table ${mb(plainAfterVacuum)} MiB on disk (space reusable, not returned)`,
    `  DETACH CONCURRENTLY + DROP:  ${fmt(drop.ms, 0)} ms, WAL ${fmt(drop.walBytes / 1024)} KiB; table ${mb(partedBefore)} -> ${mb(partedAfterDrop)} MiB on disk`,
    `  lookup by job_id (${perPartition * PARTITIONS} rows of outbox_jobs' shape, ${LOOKUPS} lookups): one table ${fmt(plainLookupUs, 0)} us, ${PARTITIONS} daily partitions ${fmt(partedLookupUs, 0)} us (${plan}-line plan: every partition's index probed)`,
    `  one day of outbox_jobs' shape (${dayRows} rows): DELETE in batches of ${BATCH} ${fmt(jobsDel.ms, 0)} ms, WAL ${mb(jobsDel.walBytes)} MiB; DETACH CONCURRENTLY + DROP ${fmt(jobsDrop.ms, 0)} ms, WAL ${fmt(jobsDrop.walBytes / 1024)} KiB`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await db.close();
}
