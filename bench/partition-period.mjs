// Choosing carrier_events' partition period by measurement (`npm run bench:partition-period`,
// which builds first). Loopback only, bounded in time. Figures for docs/retention.md.
//
// carrier_events as migration 0042 makes it, laid out two ways, each covering the default
// retention (CARRIER_EVENTS_RETENTION_HOURS, 96 h) plus the partitions made ahead:
//   daily:  a partition a day  (4 past + today + 2 ahead = 7)
//   hourly: a partition an hour (96 past + this hour + 8 ahead = 105)
// each holding BENCH_ROWS events spread over the 96 hours (ids, so created_at, of those times).
// For each layout:
//   1. ingest's guarded insert (carrier_event_twin: the key's advisory lock, a look for a twin in
//      every partition: an event without a carrier time of its own, Twilio's), one new event per
//      statement and 64 per statement (a group-commit batch); and in 64s as ingest writes an event
//      the carrier stamped a moment ago (Telnyx's occurred_at): the look only in the partitions
//      from that time less an hour on (migration 0056);
//   2. the same for a duplicate of an event stored 90 hours ago (the twin found in an old partition);
//   3. a lookup by id naming the partition key from the id (createdAtOfId), and the same lookup
//      without it (every partition's index probed);
//   4. maintenance: making one partition (onceline_add_partition) and dropping the oldest
//      (DETACH PARTITION ... CONCURRENTLY + DROP TABLE).
// By default on a private PostgreSQL cluster (bench/private-pg.mjs); BENCH_PRIVATE_PG=0 runs on a
// scratch database of BENCH_PG_BASE (127.0.0.1:5432).
import { randomUUID } from 'node:crypto';
import { newId } from '../dist/lib/platform/ids.js';
import { fmt, machine } from './lib.mjs';
import { giveUpAfter, scratchDatabase } from './scratch-pg.mjs';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const STATEMENTS = Number(process.env.BENCH_STATEMENTS ?? 2000);
const LOOKUPS = Number(process.env.BENCH_LOOKUPS ?? 5000);
const RETENTION_H = 96;
const HOUR = 3_600_000;

giveUpAfter('partition-period', Number(process.env.BENCH_MAX_SECONDS ?? 900));
const db = await scratchDatabase('onceline_bench_period');
try {
  const q = (text, values, name) => db.client.query(name ? { name, text, values } : { text, values });

  // The writer's statement, one row or a batch (src/modules/ingest/carrier-event-writer.ts).
  const INSERT = `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce, created_at)
    SELECT id, carrier, carrier_event_id, 'message.received', 'message.received', '{}', '{}', NULL, onceline_id_time(id)
      FROM json_to_recordset($1::json) AS e(id text, carrier text, carrier_event_id text)
     WHERE carrier_event_twin(carrier, carrier_event_id, NULL) IS NULL
    ON CONFLICT DO NOTHING RETURNING id`;
  const INSERT_STAMPED = INSERT.replace('carrier_event_twin(carrier, carrier_event_id, NULL)', `carrier_event_twin(carrier, carrier_event_id, NULL, now() - interval '1 hour')`);
  const BY_ID = `SELECT normalized FROM carrier_events WHERE id = $1 AND created_at BETWEEN onceline_id_window_start($1) AND onceline_id_window_end($1)`;
  const BY_ID_UNNAMED = `SELECT normalized FROM carrier_events WHERE id = $1`;

  // Before issue 44: one table, the global unique indexes, ON CONFLICT DO NOTHING as the guard.
  const PLAIN_INSERT = `INSERT INTO ce_plain (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce)
    SELECT id, carrier, carrier_event_id, 'message.received', 'message.received', '{}', '{}', NULL
      FROM json_to_recordset($1::json) AS e(id text, carrier text, carrier_event_id text)
    ON CONFLICT DO NOTHING RETURNING id`;

  async function layout(label, periodMs) {
    const plain = periodMs === undefined;
    const table = plain ? 'ce_plain' : 'carrier_events';
    if (plain) {
      await q(`CREATE TABLE ce_plain (LIKE carrier_events INCLUDING DEFAULTS, PRIMARY KEY (id), UNIQUE (carrier, carrier_event_id))`);
      await q(`CREATE UNIQUE INDEX ON ce_plain (carrier, signature_nonce) WHERE signature_nonce IS NOT NULL`);
    }
    for (const { relname } of (await q(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'carrier_events'::regclass`)).rows) {
      await q(`DROP TABLE ${relname}`);
    }
    const now = Date.now();
    const period = periodMs ?? 24 * HOUR;
    const first = Math.floor((now - RETENTION_H * HOUR) / period) * period;
    const last = (Math.floor(now / period) + 1 + (periodMs === HOUR ? 8 : 2)) * period;
    let partitions = 0;
    for (let t = first; t < last && !plain; t += periodMs) {
      await q(`SELECT onceline_add_partition('carrier_events', $1, $2)`, [new Date(t), new Date(t + periodMs)]);
      partitions++;
    }
    // BENCH_ROWS events over the retention window, oldest first.
    const keys = [];
    for (let done = 0; done < ROWS; done += 5000) {
      const n = Math.min(5000, ROWS - done);
      const rows = Array.from({ length: n }, (_, i) => {
        const at = now - RETENTION_H * HOUR + ((done + i) / ROWS) * (RETENTION_H * HOUR - 60_000);
        return { id: newId('cev', Math.floor(at)), carrier: 'telnyx', carrier_event_id: randomUUID() };
      });
      await q(`INSERT INTO ${table} (id, carrier, carrier_event_id, event_type, kind, payload, normalized, processed_at, created_at)
               SELECT id, carrier, carrier_event_id, 'message.received', 'message.received', '{}', '{}', now(), onceline_id_time(id)
                 FROM json_to_recordset($1::json) AS e(id text, carrier text, carrier_event_id text)`, [JSON.stringify(rows)]);
      keys.push(...rows);
    }
    await q(`VACUUM ANALYZE ${table}`);

    const perStatement = async (batch, rowsOf, text = plain ? PLAIN_INSERT : INSERT, name = `ins_${label}`) => {
      for (let i = 0; i < 50; i++) await q(text, [JSON.stringify(rowsOf(i))], name); // warm, and past the generic plan switch
      const started = performance.now();
      for (let i = 0; i < STATEMENTS / batch; i++) await q(text, [JSON.stringify(rowsOf(i))], name);
      return ((performance.now() - started) * 1000) / STATEMENTS;
    };
    const fresh = (n) => () => Array.from({ length: n }, () => ({ id: newId('cev'), carrier: 'telnyx', carrier_event_id: randomUUID() }));
    const newOne = await perStatement(1, fresh(1));
    const new64 = await perStatement(64, fresh(64));
    const stamped64 = plain ? undefined : await perStatement(64, fresh(64), INSERT_STAMPED, `ins_stamped_${label}`);
    // Duplicates of events stored about 90 hours ago (the first 6% of the window).
    const old = keys.slice(0, Math.ceil(ROWS * 0.06));
    const dup = await perStatement(1, (i) => [{ id: newId('cev'), carrier: 'telnyx', carrier_event_id: old[i % old.length].carrier_event_id }]);
    const doubled = Number((await q(`SELECT count(*) - count(DISTINCT carrier_event_id) AS n FROM ${table}`)).rows[0].n);
    if (doubled !== 0) throw new Error(`${label}: ${doubled} keys stored twice`);

    const lookup = async (text, name) => {
      for (let i = 0; i < 200; i++) await q(text, [keys[i].id], name);
      const started = performance.now();
      for (let i = 0; i < LOOKUPS; i++) {
        const { rowCount } = await q(text, [keys[Math.floor(Math.random() * keys.length)].id], name);
        if (rowCount !== 1) throw new Error(`${label}: lookup found ${rowCount}`);
      }
      return ((performance.now() - started) * 1000) / LOOKUPS;
    };
    const byIdUnnamed = await lookup(BY_ID_UNNAMED.replace('carrier_events', table), `byidu_${label}`);
    if (plain) return `  before (one table, global unique indexes): insert ${fmt(newOne, 0)} us/event alone, ${fmt(new64, 0)} us/event in 64s; duplicate ${fmt(dup, 0)} us; lookup by id ${fmt(byIdUnnamed, 0)} us`;
    const byId = await lookup(BY_ID, `byid_${label}`);

    const startAdd = performance.now();
    await q(`SELECT onceline_add_partition('carrier_events', $1, $2)`, [new Date(last), new Date(last + periodMs)]);
    const addMs = performance.now() - startAdd;
    const oldest = (await q(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'carrier_events'::regclass ORDER BY c.relname LIMIT 1`)).rows[0].relname;
    const oldestRows = Number((await q(`SELECT count(*) AS n FROM ${oldest}`)).rows[0].n);
    const startDrop = performance.now();
    await q(`ALTER TABLE carrier_events DETACH PARTITION ${oldest} CONCURRENTLY`);
    await q(`DROP TABLE ${oldest}`);
    const dropMs = performance.now() - startDrop;
    return `  ${label.padEnd(6)} ${String(partitions).padStart(3)} partitions: insert (guard) ${fmt(newOne, 0)} us/event alone, ${fmt(new64, 0)} us/event in 64s, ${fmt(stamped64, 0)} us/event in 64s stamped by the carrier; duplicate of a 90 h old event ${fmt(dup, 0)} us; `
      + `lookup by id ${fmt(byId, 0)} us (key from the id), ${fmt(byIdUnnamed, 0)} us (without); make a partition ${fmt(addMs, 1)} ms; DETACH CONCURRENTLY + DROP (${oldestRows} rows) ${fmt(dropMs, 0)} ms`;
  }

  const lines = [
    `partition-period: ${ROWS} events over ${RETENTION_H} h, ${STATEMENTS} inserts, ${LOOKUPS} lookups; ${db.where}, ${(await q('SHOW server_version')).rows[0].server_version}; ${machine()}`,
    await layout('plain'),
    await layout('daily', 24 * HOUR),
    await layout('hourly', HOUR),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await db.close();
}
