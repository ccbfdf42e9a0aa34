import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { EventsService } from '../../../src/modules/webhooks/events.service.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { telnyxFixture, telnyxReceipt, telnyxSigner } from '../../support/carrier-signing.js';
import { databaseBefore, type DatabaseBefore } from '../../support/database-before.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const signer = telnyxSigner();
const OUR_NUMBER = '+17735550002';
const TABLES = ['messages', 'message_status_history', 'outbound_events', 'webhook_deliveries', 'webhook_delivery_attempts'];

/**
 * Migrations 0044-0047 on a database that already holds messages, their history, customer events,
 * deliveries and attempts in the old shape (one table each, global unique indexes, foreign keys
 * between them): each table becomes the partition <table>_legacy with its rows and indexes as
 * they were (no rewrite, no index build), and the app goes on with them: a receipt for a message
 * sent before the migration finds it, a copy of an inbound message stored before is not stored
 * again, a redeliver of an event from before does not double its delivery.
 */
describe('partitioning existing messages and customer webhooks (migrations 0044-0047)', () => {
  let db: DatabaseBefore;
  let pool: pg.Pool;
  let app: TestApp | undefined;
  let receiver: WebhookReceiver;
  const indexesBefore: Record<string, string[]> = {};
  const counts: Record<string, number> = {};
  const old = { account: 'acct_old_ledger', sent: '', received: '', sentCarrierId: randomUUID(), receivedCarrierId: randomUUID(), event: '', endpoint: '', delivery: '' };

  const indexesOf = async (table: string) =>
    (await pool.query(`SELECT indexrelid::bigint AS oid FROM pg_index WHERE indrelid = $1::regclass ORDER BY indexrelid`, [table])).rows.map((r) => String(r.oid));
  const count = (sql: string, params: unknown[] = []) => db.count(sql, params);

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    // The database as it was before 0044.
    db = await databaseBefore('onceline_t_mmig', '0044');
    pool = db.pool;
    // Rows as the app wrote them then: ids minted by onceline_id() (created_at = now()).
    await pool.query(`INSERT INTO accounts (id, name) VALUES ($1, 'old')`, [old.account]);
    await pool.query(`INSERT INTO phone_numbers (id, account_id, phone_number, carrier) VALUES (onceline_id('num'), $1, $2, 'telnyx')`, [old.account, OUR_NUMBER]);
    const { rows: msgs } = await pool.query(
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
       VALUES (onceline_id('msg'), $1, 'outbound', $2, '+13125550001', 'sent before', 'sent', 1, 'GSM-7', 'telnyx', $3),
              (onceline_id('msg'), $1, 'inbound', '+13125550001', $2, 'received before', 'received', 1, 'GSM-7', 'telnyx', $4)
       RETURNING id`,
      [old.account, OUR_NUMBER, old.sentCarrierId, old.receivedCarrierId],
    );
    [old.sent, old.received] = msgs.map((m) => m.id);
    await pool.query(`INSERT INTO message_status_history (message_id, status) VALUES ($1, 'queued'), ($1, 'sending'), ($1, 'sent'), ($2, 'received')`, [old.sent, old.received]);
    const { rows: ev } = await pool.query(
      `INSERT INTO outbound_events (id, account_id, type, event_version, payload) VALUES (onceline_id('evt'), $1, 'message.sent', 1, jsonb_build_object('id', $2::text)) RETURNING id`,
      [old.account, old.sent],
    );
    old.event = ev[0].id;
    const { rows: we } = await pool.query(`INSERT INTO webhook_endpoints (id, account_id, url, secret) VALUES (onceline_id('we'), $1, $2, 'whsec_b2xk') RETURNING id`, [old.account, `${receiver.url}/old`]);
    old.endpoint = we[0].id;
    const { rows: dl } = await pool.query(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, attempt_count, delivered_at) VALUES (onceline_id('dlv'), $1, $2, $3, 'delivered', 1, now()) RETURNING id`,
      [old.event, old.endpoint, old.account],
    );
    old.delivery = dl[0].id;
    await pool.query(`INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status_code, duration_ms, at) VALUES ($1, 1, 200, 5, now())`, [old.delivery]);
    for (const table of TABLES) {
      indexesBefore[table] = await indexesOf(table);
      counts[table] = await count(`SELECT count(*) FROM ${table}`);
    }
    await db.migrateRest();
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await receiver?.close();
  });

  it('each old table is the partition <table>_legacy (MINVALUE to the validated bound) with every row and the same index relations; daily partitions follow; no foreign key into them is left', async () => {
    for (const table of TABLES) {
      expect((await pool.query(`SELECT relkind FROM pg_class WHERE oid = $1::regclass`, [table])).rows[0].relkind).toBe('p');
      const { rows: parts } = await pool.query(
        `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY c.relname`,
        [table],
      );
      expect(parts[0].name).toBe(`${table}_legacy`);
      expect(parts[0].bound).toMatch(/^FOR VALUES FROM \(MINVALUE\) TO \('/);
      expect(parts.slice(1)).toHaveLength(3);
      expect(await count(`SELECT count(*) FROM ${table}_legacy`)).toBe(counts[table]);
      expect(await count(`SELECT count(*) FROM pg_constraint WHERE conname = $1 AND convalidated`, [`${table}_legacy_bound`])).toBe(1);
      // The same index relations (renamed, adopted by the parent's), none built by the migration.
      expect(await indexesOf(`${table}_legacy`)).toEqual(indexesBefore[table]);
    }
    expect(await count(`SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND confrelid::regclass::text = ANY ($1)`, [TABLES.flatMap((t) => [t, `${t}_legacy`])])).toBe(0);
  });

  it('old rows are found by id through their partition key (the id\'s time), and an old carrier message id is a twin for message_twin', async () => {
    expect(await count(`SELECT count(*) FROM messages WHERE id = $1 AND onceline_id_key(id) = onceline_id_key_of($1)`, [old.sent])).toBe(1);
    expect(await count(`SELECT count(*) FROM message_status_history WHERE message_id = $1 AND onceline_id_key(message_id) = onceline_id_key_of($1)`, [old.sent])).toBe(3);
    expect(await count(`SELECT count(*) FROM webhook_deliveries WHERE event_id = $1 AND onceline_id_key(event_id) = onceline_id_key_of($1)`, [old.event])).toBe(1);
    expect((await pool.query(`SELECT message_twin('telnyx', $1) AS twin`, [old.receivedCarrierId])).rows[0].twin).toBe(old.received);
  });

  it('the app on the migrated database: a receipt for a message sent before finds it; a copy of an inbound message from before is not stored again; a redeliver of an old event does not double its delivery', async () => {
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { TELNYX_PUBLIC_KEY: signer.publicKey, WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' } });
    const post = async (body: string) => (await (await fetch(`${app!.url}/webhooks/telnyx`, { method: 'POST', headers: signer.headers(body), body })).json()) as { status: string };
    const processed = (carrierEventId: string) =>
      waitFor(() => count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [carrierEventId]), (n) => n === 1, { what: `${carrierEventId} processed` });

    const receipt = JSON.parse(telnyxReceipt(old.sentCarrierId, 'delivered'));
    expect(await post(JSON.stringify(receipt))).toEqual({ status: 'accepted' });
    await processed(receipt.data.id);
    expect((await pool.query(`SELECT status FROM messages WHERE id = $1`, [old.sent])).rows[0].status).toBe('delivered');
    expect((await pool.query(`SELECT status FROM message_status_history WHERE message_id = $1 ORDER BY id`, [old.sent])).rows.map((r) => r.status)).toEqual(['queued', 'sending', 'sent', 'delivered']);

    const copy = JSON.parse(telnyxFixture('message.received.json', { id: randomUUID() }));
    copy.data.payload.id = old.receivedCarrierId;
    expect(await post(JSON.stringify(copy))).toEqual({ status: 'accepted' });
    await processed(copy.data.id);
    expect(await count(`SELECT count(*) FROM messages WHERE carrier_message_id = $1`, [old.receivedCarrierId])).toBe(1);

    await app.app.get(EventsService).redeliver(old.account, old.event);
    expect(await count(`SELECT count(*) FROM webhook_deliveries WHERE event_id = $1`, [old.event])).toBe(1);
    // The old delivery started a new round (its attempt 2), in its legacy partition.
    const { rows } = await pool.query(`SELECT id, round, tableoid::regclass::text AS part FROM webhook_deliveries WHERE event_id = $1`, [old.event]);
    expect(rows[0]).toMatchObject({ id: old.delivery, round: 2, part: 'webhook_deliveries_legacy' });
    await waitFor(() => count(`SELECT count(*) FROM webhook_delivery_attempts WHERE delivery_id = $1`, [old.delivery]), (n) => n === 2, { what: 'the redelivered attempt recorded' });
  }, 60_000);
});
