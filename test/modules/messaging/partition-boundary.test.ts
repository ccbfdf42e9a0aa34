import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { IdPrefix, newId } from '../../../src/platform/ids.js';
import { telnyxFixture } from '../../support/carrier-signing.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { splitPartitionAt } from '../../support/partitions.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

const OUR_NUMBER = '+17735550002';

/**
 * messages is partitioned by its id's time, message_status_history by its message's, outbound_events
 * by its id's and webhook_deliveries by its event's (migrations 0046, 0047). A partition's unique
 * indexes hold only within it: an inbound message's (carrier, carrier_message_id) is guarded by
 * message_twin (the key's advisory lock, then a look in every partition); a delivery's
 * (event_id, endpoint_id) needs no guard, as every copy lands in its event's partition. Each test
 * puts a partition boundary a moment from now and sends the copies across it.
 */
describe('messages and webhook deliveries: one fact across a partition boundary', () => {
  let pipeline: MessagingPipeline;
  let pool: pg.Pool;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    pipeline = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx' }, { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' });
    pool = pipeline.db.pool;
  });
  afterAll(async () => {
    await pipeline.stop();
    await receiver.close();
  });

  /** A boundary `ms` from now in each table; the partitions on either side, by table. */
  async function boundaryIn(ms: number, tables: string[]): Promise<{ at: Date; sides: Record<string, { before: string; after: string }> }> {
    const at = new Date(Date.now() + ms);
    const sides: Record<string, { before: string; after: string }> = {};
    for (const table of tables) sides[table] = await splitPartitionAt(pool, at, table);
    return { at, sides };
  }
  const passed = (at: Date) => waitFor(() => Date.now(), (now) => now > at.getTime() + 5, { what: 'the boundary to pass' });

  /** An inbound SMS delivered by Telnyx under a new event id, carrying carrier message `carrierMessageId`; its event id. */
  async function inbound(carrierMessageId: string): Promise<string> {
    const body = JSON.parse(telnyxFixture('message.received.json', { id: randomUUID() }));
    body.data.payload.id = carrierMessageId;
    expect(await pipeline.deliverTelnyx(JSON.stringify(body))).toBe(200);
    return body.data.id;
  }
  const processed = (carrierEventId: string) =>
    waitFor(() => pipeline.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND processed_at IS NOT NULL`, [carrierEventId]), (n) => n === 1, {
      what: `carrier event ${carrierEventId} processed`,
    });
  const messagesOf = (carrierMessageId: string) =>
    pool.query<{ id: string; part: string }>(`SELECT id, tableoid::regclass::text AS part FROM messages WHERE carrier = 'telnyx' AND carrier_message_id = $1`, [carrierMessageId]).then((r) => r.rows);
  /** Waits for a transaction of the app to wait on the advisory lock of `key` (message_twin's). */
  const waitingOnLock = (key: string) =>
    waitFor(
      () => pipeline.db.count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`, [key]),
      (n) => n === 1,
      { what: `the app to wait on the lock of ${key}` },
    );

  it('the same carrier message delivered again after a boundary (another carrier event), stored just before it, is one message: one row, one history row, one message.received', async () => {
    const carrierMessageId = randomUUID();
    await processed(await inbound(carrierMessageId));
    // The boundary after the first is stored (its id is minted when its event is processed).
    const { at, sides } = await boundaryIn(1000, ['messages', 'message_status_history']);
    await passed(at);
    await processed(await inbound(carrierMessageId));
    const rows = await messagesOf(carrierMessageId);
    expect(rows.map((r) => r.part)).toEqual([sides.messages.before]);
    const history = await pool.query(`SELECT tableoid::regclass::text AS part FROM message_status_history WHERE message_id = $1`, [rows[0].id]);
    expect(history.rows.map((r) => r.part)).toEqual([sides.message_status_history.before]);
    expect(await pipeline.events('message.received', rows[0].id)).toBe(1);
    // A new message after the boundary lands on the other side: the boundary is real.
    const later = randomUUID();
    await processed(await inbound(later));
    expect((await messagesOf(later)).map((r) => r.part)).toEqual([sides.messages.after]);
  }, 30_000);

  /**
   * The race: the carrier message stored before the boundary by a transaction the test holds
   * open (having taken message_twin's lock, as the inbound INSERT does), the copy delivered after
   * it. Its statement waits on the key's lock; when the test commits, it sees the committed twin
   * (a fresh snapshot after the lock) and stores nothing; when the test rolls back, it stores the
   * message: neither doubled nor lost.
   */
  it.each([
    ['commits', 'the held one', 'before'],
    ['rolls back', "the app's", 'after'],
  ] as const)('two copies racing across the boundary, the first held by the test, which then %s: one message, %s', async (ending, _which, side) => {
    // Minted before the boundary is made: the held copy's partition is the one before it.
    const heldId = newId(IdPrefix.Message);
    const { at, sides } = await boundaryIn(1500, ['messages']);
    const carrierMessageId = randomUUID();
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      const { rows: twin } = await holder.query(`SELECT message_twin('telnyx', $1) AS twin`, [carrierMessageId]);
      expect(twin[0].twin).toBeNull();
      await holder.query(
        `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
         VALUES ($1, $2, 'inbound', '+13125550001', $3, 'held', 'received', 1, 'GSM-7', 'telnyx', $4)`,
        [heldId, pipeline.customer.accountId, OUR_NUMBER, carrierMessageId],
      );
      expect((await holder.query(`SELECT tableoid::regclass::text AS part FROM messages WHERE id = $1`, [heldId])).rows[0].part).toBe(sides.messages.before);
      await passed(at);
      const eventId = await inbound(carrierMessageId);
      await waitingOnLock(`message:telnyx:${carrierMessageId}`);
      await holder.query(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
      await processed(eventId);
      const rows = await messagesOf(carrierMessageId);
      expect(rows).toHaveLength(1);
      expect(rows[0].part).toBe(side === 'before' ? sides.messages.before : sides.messages.after);
      expect(rows[0].id === heldId).toBe(ending === 'commits');
      expect(await pipeline.events('message.received', rows[0].id)).toBe(ending === 'commits' ? 0 : 1);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  }, 30_000);

  /**
   * An event stored before the boundary, a delivery of it made after (a redeliver, to an endpoint
   * subscribed since), racing a copy the test inserts and holds uncommitted: both land in the
   * event's partition, so the redeliver's INSERT waits on the held row's unique entry; commit →
   * the redeliver makes none, rollback → it makes it. One delivery either way, before the boundary.
   */
  it.each([['commits'], ['rolls back']] as const)('a delivery of an event from before the boundary, made after it twice at once (the first held by the test, which then %s): one delivery, in the event\'s partition', async (ending) => {
    const carrierMessageId = randomUUID();
    await processed(await inbound(carrierMessageId));
    const { at, sides } = await boundaryIn(1000, ['outbound_events', 'webhook_deliveries']);
    const [message] = await messagesOf(carrierMessageId);
    const { rows: events } = await pool.query(`SELECT id, tableoid::regclass::text AS part FROM outbound_events WHERE type = 'message.received' AND payload->>'id' = $1`, [message.id]);
    expect(events.map((e) => e.part)).toEqual([sides.outbound_events.before]);
    const eventId: string = events[0].id;
    await passed(at);
    const endpoint = await pipeline.customer.post('/v2/webhook_endpoints', { url: `${receiver.url}/boundary-${ending.replace(' ', '-')}` });
    expect(endpoint.status).toBe(201);
    const endpointId: string = endpoint.body.data.id;
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      const { rows: held } = await holder.query(
        `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, next_attempt_at)
         VALUES (onceline_id('dlv'), $1, $2, $3, 'delivered', NULL) RETURNING id, tableoid::regclass::text AS part`,
        [eventId, endpointId, pipeline.customer.accountId],
      );
      expect(held[0].part).toBe(sides.webhook_deliveries.before);
      const redeliver = pipeline.customer.post(`/v2/events/${eventId}/redeliver`, {});
      await waitFor(
        () => pipeline.db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'transactionid'`),
        (n) => n === 1,
        { what: "the redeliver's INSERT to wait on the held delivery" },
      );
      await holder.query(ending === 'commits' ? 'COMMIT' : 'ROLLBACK');
      expect((await redeliver).status).toBeLessThan(300);
      const { rows } = await pool.query(`SELECT id, tableoid::regclass::text AS part FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2`, [eventId, endpointId]);
      expect(rows).toHaveLength(1);
      expect(rows[0].part).toBe(sides.webhook_deliveries.before);
      expect(rows[0].id === held[0].id).toBe(ending === 'commits');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
  }, 30_000);

  it('a lookup of a message by id names the partition key from the id: one partition scanned', async () => {
    const carrierMessageId = randomUUID();
    await processed(await inbound(carrierMessageId));
    const [row] = await messagesOf(carrierMessageId);
    const { rows: plan } = await pool.query(`EXPLAIN (FORMAT JSON) SELECT id FROM messages WHERE id = $1 AND onceline_id_key(id) = onceline_id_key_of($1)`, [row.id]);
    const text = JSON.stringify(plan[0]['QUERY PLAN']);
    const scanned = (text.match(/"Relation Name":"messages_\w+"/g) ?? []).map((m) => m.slice(17, -1));
    const removed = Number(text.match(/"Subplans Removed":(\d+)/)?.[1] ?? 0);
    expect(scanned).toEqual([row.part]);
    expect(removed).toBeGreaterThanOrEqual(2);
  });
});
