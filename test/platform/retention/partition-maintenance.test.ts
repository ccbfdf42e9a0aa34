import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { IdPrefix, newId } from '../../../src/platform/ids.js';
import { PartitionMaintenance } from '../../../src/platform/retention/partition-maintenance.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

const DAY = 86_400_000;

/**
 * The relay's partition maintenance, run by hand (no relay loop): partitions made ahead, and a
 * partition past retention dropped (DETACH CONCURRENTLY + DROP) only when none of its events is
 * unprocessed. Old partitions are made here with onceline_add_partition and filled with events
 * whose ids (so created_at) are of that time.
 */
describe('time partitions: made ahead, dropped past retention, never while they owe work', () => {
  let db: TestDatabase;
  let app: TestApp;
  let maintenance: PartitionMaintenance;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, http: false, env: { PARTITIONS_AHEAD: '4', CARRIER_EVENTS_RETENTION_HOURS: '96' } });
    maintenance = app.app.get(PartitionMaintenance);
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  const partitions = async (table = 'carrier_events') =>
    (await db.pool.query<{ name: string }>(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`, [table])).rows.map((r) => r.name);
  /** One maintenance run; what it did to `table`. */
  const run = async (table = 'carrier_events') => (await maintenance.maintain())!.find((r) => r.table === table)!;
  const exists = async (name: string) => (await db.count(`SELECT count(*) FROM pg_class WHERE relname = $1`, [name])) === 1;

  /** A day-long partition `daysAgo` days before today's, and one event stored in it (processed or not). */
  async function oldPartitionWith(daysAgo: number, processed: boolean): Promise<{ name: string; eventId: string }> {
    const today = Math.floor(Date.now() / DAY) * DAY;
    const from = new Date(today - daysAgo * DAY);
    const { rows } = await db.pool.query(`SELECT onceline_add_partition('carrier_events', $1, $2) AS name`, [from, new Date(from.getTime() + DAY)]);
    const eventId = newId(IdPrefix.CarrierEvent, from.getTime() + 3_600_000);
    await db.pool.query(
      `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, created_at, processed_at)
       VALUES ($1, 'telnyx', $2, 'message.received', 'message.received', '{}', '{}', onceline_id_time($1), CASE WHEN $3 THEN now() END)`,
      [eventId, randomUUID(), processed],
    );
    return { name: rows[0].name, eventId };
  }

  it('makes partitions PARTITIONS_AHEAD periods (days) ahead of today, named after their start; a second run makes none', async () => {
    const first = (await maintenance.maintain())!;
    expect(first.map((r) => r.table)).toEqual(
      expect.arrayContaining([
        'carrier_events', 'outbox_jobs', 'usage_records', 'calls', 'call_legs', 'call_timeline', 'call_transcript_fragments', 'call_command_sends',
        'messages', 'message_status_history', 'outbound_events', 'webhook_deliveries', 'webhook_delivery_attempts',
      ]),
    );
    const today = Math.floor(Date.now() / DAY) * DAY;
    const names = await partitions();
    for (let d = 0; d <= 4; d++) {
      const start = new Date(today + d * DAY).toISOString().replace(/[-:]/g, '').slice(0, 15).toLowerCase();
      expect(names).toContain(`carrier_events_p${start}`);
      expect(await partitions('outbox_jobs')).toContain(`outbox_jobs_p${start}`);
    }
    for (const table of first) expect(table.created.length).toBeGreaterThanOrEqual(2);
    for (const table of (await maintenance.maintain())!) expect(table.created).toEqual([]);
  });

  it('drops a partition past retention whose events are all processed; keeps one holding an unprocessed event, then drops it once that event is processed', async () => {
    const done = await oldPartitionWith(10, true);
    const owed = await oldPartitionWith(9, false);
    const young = await oldPartitionWith(2, true);
    const status = (await maintenance.status()).find((t) => t.table === 'carrier_events')!;
    expect(status.plan.expired.map((p) => p.name)).toEqual([done.name, owed.name]);
    expect(status.held).toEqual([owed.name]);

    const result = await run();
    expect(result).toMatchObject({ dropped: [done.name], held: [owed.name] });
    expect(await exists(done.name)).toBe(false);
    expect(await partitions()).toEqual(expect.arrayContaining([owed.name, young.name]));
    // The unprocessed event is still there, found by id through its partition.
    expect(await db.count(`SELECT count(*) FROM carrier_events WHERE id = $1 AND created_at BETWEEN onceline_id_window_start($1) AND onceline_id_window_end($1)`, [owed.eventId])).toBe(1);

    await db.pool.query(`UPDATE carrier_events SET processed_at = now() WHERE id = $1`, [owed.eventId]);
    expect(await run()).toMatchObject({ dropped: [owed.name], held: [] });
    expect(await partitions()).toContain(young.name);
  });

  it('outbox_jobs: a day past OUTBOX_RETENTION_HOURS holding a job without an outcome (scheduled far ahead) is kept; once the job is completed the partition is dropped', async () => {
    const today = Math.floor(Date.now() / DAY) * DAY;
    const from = new Date(today - 8 * DAY);
    const { rows } = await db.pool.query(`SELECT onceline_add_partition('outbox_jobs', $1, $2) AS name`, [from, new Date(from.getTime() + DAY)]);
    const name: string = rows[0].name;
    const jobId = `dispatch-scheduled-${randomUUID()}`;
    await db.pool.query(
      `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at, created_at) VALUES ($1, 'messaging', 'dispatch-message', '{}', now() + interval '20 days', $2),
                                                                              ($3, 'system', 'probe', '{}', $2, $2)`,
      [jobId, new Date(from.getTime() + 60_000), `done-${randomUUID()}`],
    );
    await db.pool.query(`UPDATE outbox_jobs SET completed_at = now() WHERE job_id LIKE 'done-%'`);
    expect(await run('outbox_jobs')).toMatchObject({ dropped: [], held: [name] });
    expect(await db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1`, [jobId])).toBe(1);
    await db.pool.query(`UPDATE outbox_jobs SET completed_at = now() WHERE job_id = $1`, [jobId]);
    expect(await run('outbox_jobs')).toMatchObject({ dropped: [name], held: [] });
  });

  it('a run that died between DETACH and DROP: the detached table is dropped by the next run, unless it owes work (then kept for a human)', async () => {
    const idle = await oldPartitionWith(12, true);
    const owed = await oldPartitionWith(13, false);
    await db.pool.query(`ALTER TABLE carrier_events DETACH PARTITION ${idle.name}`);
    await db.pool.query(`ALTER TABLE carrier_events DETACH PARTITION ${owed.name}`);
    const result = await run();
    expect(result.dropped).toEqual([idle.name]);
    expect(await exists(idle.name)).toBe(false);
    expect(await exists(owed.name)).toBe(true);
    await db.pool.query(`DROP TABLE ${owed.name}`);
  });

  it('one run at a time: while another holds the maintenance lock, a run does nothing', async () => {
    const other = await db.pool.connect();
    try {
      await other.query('SELECT pg_advisory_lock(7271044)');
      expect(await maintenance.maintain()).toBeUndefined();
    } finally {
      await other.query('SELECT pg_advisory_unlock(7271044)');
      other.release();
    }
    expect(await maintenance.maintain()).toBeDefined();
  });
});
