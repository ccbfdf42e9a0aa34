import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { newId, IdPrefix } from '../../../src/platform/ids.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { carrierFixture, formBody, parseForm, telnyxFixture, telnyxSigner, twilioHeaders } from '../../support/carrier-signing.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { partitionOf, splitPartitionAt } from '../../support/partitions.js';
import { waitFor } from '../../support/wait.js';

const AUTH_TOKEN = 'boundary-test-token';
const PUBLIC_BASE = 'https://hooks.example.test';
const signer = telnyxSigner();

/**
 * carrier_events is partitioned by created_at, which ingest takes from the row's id (minted when
 * the delivery is stored). A partition's unique indexes hold only within it, so the dedupe guard
 * is carrier_event_twin (migration 0042): the key's advisory lock, then a look in every partition.
 * Each test puts a partition boundary a moment from now and sends the twins across it.
 */
describe('dedupe across a partition boundary', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    // No relay (its maintenance would reshape partitions) and no worker: what ingest stores.
    app = await startTestApp({ databaseUrl: db.url, env: { TELNYX_PUBLIC_KEY: signer.publicKey, TWILIO_AUTH_TOKEN: AUTH_TOKEN, PUBLIC_BASE_URL: PUBLIC_BASE } });
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  async function postTelnyx(body: string): Promise<{ status: number; body: { status?: string } }> {
    const res = await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body });
    return { status: res.status, body: (await res.json()) as { status?: string } };
  }

  async function postTwilioStatus(fields: Record<string, string>): Promise<{ status: number; body: { status?: string } }> {
    const path = '/webhooks/twilio/messaging';
    const res = await fetch(app.url + path, { method: 'POST', headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + path, fields, `tok-${randomUUID()}`), body: formBody(fields) });
    return { status: res.status, body: (await res.json()) as { status?: string } };
  }

  /** A partition boundary `ms` from now; resolves with the partitions on either side. */
  async function boundaryIn(ms: number): Promise<{ at: Date; before: string; after: string }> {
    const at = new Date(Date.now() + ms);
    return { at, ...(await splitPartitionAt(db.pool, at)) };
  }

  const passed = (at: Date) => waitFor(() => Date.now(), (now) => now > at.getTime() + 5, { what: 'the boundary to pass' });

  const stored = (carrier: string, key: string) =>
    db.pool.query<{ id: string; part: string }>(`SELECT id, tableoid::regclass::text AS part FROM carrier_events WHERE carrier = $1 AND carrier_event_id = $2`, [carrier, key]).then((r) => r.rows);

  const jobsOf = (ids: string[]) => db.count(`SELECT count(*) FROM outbox_jobs WHERE name = 'process-carrier-event' AND job_id = ANY ($1)`, [ids]);

  it('a Telnyx retry (re-signed, meta.attempt 2, same data.id) arriving just after a boundary, of an event stored just before it, is a duplicate: one row, one job', async () => {
    const { at, before, after } = await boundaryIn(1500);
    const key = randomUUID();
    expect(await postTelnyx(telnyxFixture('message.received.json', { id: key, attempt: 1 }))).toEqual({ status: 200, body: { status: 'accepted' } });
    await passed(at);
    expect(await postTelnyx(telnyxFixture('message.received.json', { id: key, attempt: 2 }))).toEqual({ status: 200, body: { status: 'duplicate' } });
    const rows = await stored('telnyx', key);
    expect(rows.map((r) => r.part)).toEqual([before]);
    expect(await jobsOf(rows.map((r) => r.id))).toBe(1);
    // A new delivery after the boundary lands on the other side: the boundary is real.
    const later = randomUUID();
    expect((await postTelnyx(telnyxFixture('message.received.json', { id: later }))).body.status).toBe('accepted');
    expect((await stored('telnyx', later)).map((r) => r.part)).toEqual([after]);
  }, 30_000);

  it('a Twilio status callback (<Sid>:<Status> key, a new idempotency token) repeated after the boundary is a duplicate', async () => {
    const { at, before } = await boundaryIn(1500);
    const fields = { ...parseForm(carrierFixture('twilio/status-delivered.form')), MessageSid: `SM${randomUUID().replace(/-/g, '')}` };
    expect((await postTwilioStatus(fields)).body).toEqual({ status: 'accepted' });
    await passed(at);
    expect((await postTwilioStatus(fields)).body).toEqual({ status: 'duplicate' });
    expect((await stored('twilio', `${fields.MessageSid}:delivered`)).map((r) => r.part)).toEqual([before]);
  }, 30_000);

  /**
   * The race: a twin stored before the boundary by a transaction the test holds open (having
   * taken the key's lock as ingest's insert does), the other delivered after it. The delivery's
   * statement waits on the key's lock; when the test commits, it sees the committed twin (its
   * look takes a fresh snapshot after the lock) and stores nothing; when the test rolls back, it
   * stores the event: the guard neither doubles nor loses it.
   */
  it.each([
    ['commits', 'duplicate', 'before'],
    ['rolls back', 'accepted', 'after'],
  ] as const)('two twins racing across the boundary, the first held by the test, which then %s: the delivery is %s, one row', async (ending, outcome, side) => {
    const { at, before, after } = await boundaryIn(1500);
    const key = randomUUID();
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      const heldId = newId(IdPrefix.CarrierEvent);
      const { rows: twin } = await holder.query(`SELECT carrier_event_twin('telnyx', $1, NULL) AS twin`, [key]);
      expect(twin[0].twin).toBeNull();
      await holder.query(
        `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, created_at)
         VALUES ($1, 'telnyx', $2, 'message.received', 'message.received', '{}', '{}', onceline_id_time($1))`,
        [heldId, key],
      );
      expect(await partitionOfHeld(holder, heldId)).toBe(before);
      await passed(at);
      const delivery = postTelnyx(telnyxFixture('message.received.json', { id: key }));
      await waitFor(() => db.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`), (n) => n === 1, {
        what: 'the delivery to wait on the key lock the test holds',
      });
      await holder.query(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
      expect(await delivery).toEqual({ status: 200, body: { status: outcome } });
      const rows = await stored('telnyx', key);
      expect(rows).toHaveLength(1);
      expect(rows[0].part).toBe(side === 'before' ? before : after);
      expect(rows[0].id === heldId).toBe(ending === 'commits');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  }, 30_000);

  it('a lookup by id names the partition key from the id: it scans only the partitions within minutes of the id\'s time (here, split seconds apart, several; never tomorrow\'s)', async () => {
    const key = randomUUID();
    expect((await postTelnyx(telnyxFixture('message.received.json', { id: key }))).body.status).toBe('accepted');
    const [row] = await stored('telnyx', key);
    expect(await partitionOf(db.pool, row.id)).toBe(row.part);
    const { rows: plan } = await db.pool.query(
      `EXPLAIN (FORMAT JSON) SELECT id FROM carrier_events WHERE id = $1 AND created_at BETWEEN onceline_id_window_start($1) AND onceline_id_window_end($1)`,
      [row.id],
    );
    const scanned = (JSON.stringify(plan[0]['QUERY PLAN']).match(/"Relation Name":"carrier_events_\w+"/g) ?? []).map((m) => m.slice(17, -1));
    const { rows: far } = await db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'carrier_events'::regclass
          AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), $$FROM \\('([^']*)'\\)$$))[1]::timestamptz > onceline_id_window_end($1)`,
      [row.id],
    );
    expect(far.length).toBeGreaterThanOrEqual(2);
    expect(scanned).toContain(row.part);
    for (const { name } of far) expect(scanned).not.toContain(name);
  });
});

/**
 * carrier_event_twin looks for a twin only in the partitions from `twin_since` on (migration 0056):
 * the carrier's own time for the event, which every retry repeats (Telnyx's occurred_at), less an
 * hour for its clock. A copy cannot have reached us before the event happened, so the partitions
 * before that hold no twin; an event without a carrier time of its own (Twilio's callbacks) is
 * looked for in every partition.
 */
describe('where the dedupe guard looks: from the event\'s own time on', () => {
  let db: TestDatabase;
  let app: TestApp;
  const DAY = 86_400_000;
  const threeDaysAgo = Date.now() - 3 * DAY;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, env: { TELNYX_PUBLIC_KEY: signer.publicKey, TWILIO_AUTH_TOKEN: AUTH_TOKEN, PUBLIC_BASE_URL: PUBLIC_BASE } });
    // The day of three days ago, as retention keeps it (a fresh database starts today).
    const day = Math.floor(threeDaysAgo / DAY) * DAY;
    await db.pool.query(`SELECT onceline_add_partition('carrier_events', $1, $2)`, [new Date(day), new Date(day + DAY)]);
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  /** A row stored three days ago (its id, so its partition, of that time), as ingest stores one. */
  async function storedThreeDaysAgo(carrier: string, key: string): Promise<string> {
    const id = newId(IdPrefix.CarrierEvent, threeDaysAgo);
    await db.pool.query(
      `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, processed_at, created_at)
       VALUES ($1, $2, $3, 'message.received', 'message.received', '{}', '{}', now(), onceline_id_time($1))`,
      [id, carrier, key],
    );
    return id;
  }
  const rowsOf = (carrier: string, key: string) =>
    db.pool.query<{ id: string }>(`SELECT id FROM carrier_events WHERE carrier = $1 AND carrier_event_id = $2 ORDER BY id`, [carrier, key]).then((r) => r.rows.map((row) => row.id));
  const postTelnyx = async (body: string) => ((await (await fetch(`${app.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).json()) as { status?: string }).status;

  it('a Telnyx retry three days after its event (occurred_at repeated) finds its twin in the three-day-old partition: a duplicate', async () => {
    const key = randomUUID();
    const twin = await storedThreeDaysAgo('telnyx', key);
    const occurredAt = new Date(threeDaysAgo - 60_000).toISOString();
    expect(await postTelnyx(telnyxFixture('message.received.json', { id: key, attempt: 5, occurredAt }))).toBe('duplicate');
    expect(await rowsOf('telnyx', key)).toEqual([twin]);
  });

  it('an event the carrier stamps with today\'s time is not looked for three days back: a row stored there under its key (which no real copy of it can be) is not met', async () => {
    const key = randomUUID();
    const planted = await storedThreeDaysAgo('telnyx', key);
    expect(await postTelnyx(telnyxFixture('message.received.json', { id: key, occurredAt: new Date().toISOString() }))).toBe('accepted');
    const rows = await rowsOf('telnyx', key);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toBe(planted);
  });

  it('a Twilio callback (no time of the carrier\'s) is looked for in every partition: its twin three days old makes it a duplicate', async () => {
    const fields = { ...parseForm(carrierFixture('twilio/status-delivered.form')), MessageSid: `SM${randomUUID().replace(/-/g, '')}` };
    const twin = await storedThreeDaysAgo('twilio', `${fields.MessageSid}:delivered`);
    const path = '/webhooks/twilio/messaging';
    const res = await fetch(app.url + path, { method: 'POST', headers: twilioHeaders(AUTH_TOKEN, PUBLIC_BASE + path, fields, `tok-${randomUUID()}`), body: formBody(fields) });
    expect(((await res.json()) as { status?: string }).status).toBe('duplicate');
    expect(await rowsOf('twilio', `${fields.MessageSid}:delivered`)).toEqual([twin]);
  });
});

async function partitionOfHeld(client: { query: (sql: string, params: unknown[]) => Promise<{ rows: { name: string }[] }> }, id: string): Promise<string> {
  const { rows } = await client.query(`SELECT tableoid::regclass::text AS name FROM carrier_events WHERE id = $1`, [id]);
  return rows[0].name;
}
