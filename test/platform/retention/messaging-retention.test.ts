import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { IdPrefix, newId } from '../../../src/platform/ids.js';
import { PartitionMaintenance, type MaintenanceResult } from '../../../src/platform/retention/partition-maintenance.js';
import { VerifyService } from '../../../src/platform/verify/verify.service.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

const DAY = 86_400_000;

/**
 * Retention of messages (with their history) and of customer events (with their deliveries and
 * attempts), registered by their modules (MessagesRetention, WebhooksRetention): a day past
 * retention is dropped only once nothing in it is still owed. A message still sending (or of
 * unknown outcome) keeps its day in messages and in message_status_history; an undelivered
 * (pending or parked) webhook delivery keeps its event's day in outbound_events,
 * webhook_deliveries and webhook_delivery_attempts. Rows are stored under ids of that day (the
 * partition key is the id's time), in partitions made here with onceline_add_partition.
 */
describe('retention of messages and customer webhooks: never a day that still owes a send or a delivery', () => {
  let db: TestDatabase;
  let app: TestApp;
  let maintenance: PartitionMaintenance;
  let accountId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      databaseUrl: db.url,
      http: false,
      env: { MESSAGES_RETENTION_HOURS: '96', CUSTOMER_EVENTS_RETENTION_HOURS: '96', WEBHOOK_DELIVERIES_RETENTION_HOURS: '96' },
    });
    maintenance = app.app.get(PartitionMaintenance);
    accountId = (await app.app.get(AccountsService).createAccount('retention')).account.id;
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  /** One maintenance run, by table. */
  async function run(): Promise<Record<string, MaintenanceResult>> {
    return Object.fromEntries((await maintenance.maintain())!.map((r) => [r.table, r]));
  }
  const exists = async (name: string) => (await db.count(`SELECT count(*) FROM pg_class WHERE relname = $1`, [name])) === 1;

  /** The day `daysAgo` days before today's: its partition of each table, and an instant inside it. */
  async function oldDay(daysAgo: number, tables: string[]): Promise<{ at: number; parts: Record<string, string> }> {
    const from = new Date(Math.floor(Date.now() / DAY) * DAY - daysAgo * DAY);
    const parts: Record<string, string> = {};
    for (const table of tables) {
      const { rows } = await db.pool.query(`SELECT onceline_add_partition($1, $2, $3) AS name`, [table, from, new Date(from.getTime() + DAY)]);
      parts[table] = rows[0].name;
    }
    return { at: from.getTime() + 3_600_000, parts };
  }

  /** A message of that day with its history, left `status` (and of unknown outcome when asked). */
  async function messageAt(at: number, status: string, outcomeUnknown = false): Promise<string> {
    const id = newId(IdPrefix.Message, at);
    await db.pool.query(
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, outcome_unknown_since)
       VALUES ($1, $2, 'outbound', '+13125550100', '+13125550101', 'old', $3, 1, 'GSM-7', 'telnyx', CASE WHEN $4 THEN now() END)`,
      [id, accountId, status, outcomeUnknown],
    );
    await db.pool.query(`INSERT INTO message_status_history (message_id, status) VALUES ($1, 'queued'), ($1, $2)`, [id, status]);
    return id;
  }

  const MESSAGES = ['messages', 'message_status_history'];
  const WEBHOOKS = ['outbound_events', 'webhook_deliveries', 'webhook_delivery_attempts'];

  it('retention:status (PartitionMaintenance.status) lists the five tables with their retention', async () => {
    const status = await maintenance.status();
    for (const table of [...MESSAGES, ...WEBHOOKS]) expect(status.find((t) => t.table === table)).toMatchObject({ retentionHours: 96, held: [] });
  });

  it('a message still sending keeps its day (messages and its history) past retention; a settled day goes; once it is sent, its day goes too', async () => {
    const settled = await oldDay(11, MESSAGES);
    await messageAt(settled.at, 'delivered');
    await messageAt(settled.at, 'received');
    const sending = await oldDay(10, MESSAGES);
    const sendingId = await messageAt(sending.at, 'sending');
    await messageAt(sending.at, 'failed');

    const first = await run();
    for (const table of MESSAGES) {
      expect(first[table]).toMatchObject({ dropped: [settled.parts[table]], held: [sending.parts[table]] });
      expect(await exists(settled.parts[table])).toBe(false);
    }
    // Still found, with its history, through the kept partitions.
    expect(await db.count(`SELECT count(*) FROM message_status_history WHERE message_id = $1`, [sendingId])).toBe(2);

    // Its outcome becomes unknown: still owed.
    await db.pool.query(`UPDATE messages SET outcome_unknown_since = now() WHERE id = $1`, [sendingId]);
    for (const table of MESSAGES) expect((await run())[table]).toMatchObject({ dropped: [], held: [sending.parts[table]] });

    await db.pool.query(`UPDATE messages SET status = 'sent', outcome_unknown_since = NULL WHERE id = $1`, [sendingId]);
    const last = await run();
    for (const table of MESSAGES) {
      expect(last[table]).toMatchObject({ dropped: [sending.parts[table]], held: [] });
      expect(await exists(sending.parts[table])).toBe(false);
    }
  });

  it('queued and scheduled messages keep their day too', async () => {
    const day = await oldDay(12, MESSAGES);
    const scheduled = await messageAt(day.at, 'scheduled');
    const queued = await messageAt(day.at, 'queued');
    expect((await run()).messages).toMatchObject({ dropped: [], held: [day.parts.messages] });
    await db.pool.query(`UPDATE messages SET status = 'cancelled' WHERE id = $1`, [scheduled]);
    expect((await run()).messages).toMatchObject({ dropped: [], held: [day.parts.messages] });
    await db.pool.query(`UPDATE messages SET status = 'failed' WHERE id = $1`, [queued]);
    for (const [table, result] of Object.entries(await run())) if (MESSAGES.includes(table)) expect(result).toMatchObject({ dropped: [day.parts[table]], held: [] });
  });

  it('an undelivered webhook keeps its event\'s day (the event, its deliveries and their attempts) past retention, pending and then parked; once delivered, the day goes', async () => {
    const { rows: endpoints } = await db.pool.query(
      `INSERT INTO webhook_endpoints (id, account_id, url, secret) VALUES (onceline_id('we'), $1, 'https://example.com/hook', 'whsec_x') RETURNING id`,
      [accountId],
    );
    const endpointId: string = endpoints[0].id;
    /** An event of that day with a delivery to the endpoint (one failed attempt made), left `status`. */
    async function deliveryAt(at: number, status: string): Promise<string> {
      const eventId = newId(IdPrefix.Event, at);
      await db.pool.query(`INSERT INTO outbound_events (id, account_id, type, event_version, payload) VALUES ($1, $2, 'message.received', 1, '{}')`, [eventId, accountId]);
      const { rows } = await db.pool.query(
        `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, account_id, status, attempt_count, parked_at)
         VALUES ($1, $2, $3, $4, $5, 1, CASE WHEN $5 = 'parked' THEN now() END) RETURNING id`,
        [newId(IdPrefix.WebhookDelivery, at), eventId, endpointId, accountId, status],
      );
      await db.pool.query(`INSERT INTO webhook_delivery_attempts (delivery_id, attempt, status_code, duration_ms, at) VALUES ($1, 1, 500, 12, now())`, [rows[0].id]);
      return rows[0].id;
    }
    const done = await oldDay(11, WEBHOOKS);
    await deliveryAt(done.at, 'delivered');
    await deliveryAt(done.at, 'failed');
    const owed = await oldDay(10, WEBHOOKS);
    const pendingId = await deliveryAt(owed.at, 'pending');
    await deliveryAt(owed.at, 'delivered');

    const first = await run();
    for (const table of WEBHOOKS) {
      expect(first[table]).toMatchObject({ dropped: [done.parts[table]], held: [owed.parts[table]] });
      expect(await exists(done.parts[table])).toBe(false);
    }
    // Parked (its endpoint disabled): still owed.
    await db.pool.query(`UPDATE webhook_deliveries SET status = 'parked', parked_at = now() WHERE id = $1`, [pendingId]);
    for (const [table, result] of Object.entries(await run())) if (WEBHOOKS.includes(table)) expect(result).toMatchObject({ dropped: [], held: [owed.parts[table]] });
    // Its attempts are still there for GET .../deliveries.
    expect(await db.count(`SELECT count(*) FROM webhook_delivery_attempts WHERE delivery_id = $1`, [pendingId])).toBe(1);

    await db.pool.query(`UPDATE webhook_deliveries SET status = 'delivered', parked_at = NULL, delivered_at = now() WHERE id = $1`, [pendingId]);
    const last = await run();
    for (const table of WEBHOOKS) {
      expect(last[table]).toMatchObject({ dropped: [owed.parts[table]], held: [] });
      expect(await exists(owed.parts[table])).toBe(false);
    }
  });

  /**
   * The usage ledger is kept, and a message's events may be of a later day than the message: once
   * retention dropped a message's day, its usage row and its later events are left without it.
   * verify counts a resource's or a transition's partners only where they are all still kept
   * (younger than the retentions: keptSince); a young orphan is still a violation.
   */
  it('verify after retention: a usage row or a message event whose message was dropped with its day is no violation; a young orphan still is', async () => {
    const dropped = newId(IdPrefix.Message, Date.now() - 40 * DAY);
    const missing = newId(IdPrefix.Message);
    const usage = (id: string, messageId: string) =>
      db.pool.query(
        `INSERT INTO usage_records (id, account_id, kind, resource_id, quantity, unit_price_micros, amount_micros, cause)
         VALUES ($1, $2, 'sms_outbound_segments', $3, 1, 4000, 4000, jsonb_build_object('resource', jsonb_build_object('type', 'message', 'id', $3::text), 'carrier_events', '[]'::jsonb, 'legacy', true,
                 'price_rule', jsonb_build_object('quantity', 1, 'unit_price_micros', 4000)))`,
        [id, accountId, messageId],
      );
    await usage(newId(IdPrefix.UsageRecord), dropped);
    const youngUsage = newId(IdPrefix.UsageRecord);
    await usage(youngUsage, missing);
    for (const messageId of [dropped, missing]) {
      await db.pool.query(`INSERT INTO outbound_events (id, account_id, type, event_version, payload) VALUES (onceline_id('evt'), $1, 'message.delivered', 1, jsonb_build_object('id', $2::text))`, [accountId, messageId]);
    }
    const report = await app.app.get(VerifyService).run({ limit: 10 });
    const invariant = (name: string) => report.invariants.find((i) => i.name === name);
    expect(invariant('billing.usage_has_resource')).toMatchObject({ ok: false, count: 1, examples: [youngUsage] });
    expect(invariant('messaging.one_event_per_transition')).toMatchObject({ ok: false, count: 1, examples: [missing] });
  });

  it('a day of messages or events within retention is kept whatever it holds', async () => {
    const young = await oldDay(2, MESSAGES);
    await messageAt(young.at, 'delivered');
    const result = await run();
    for (const table of MESSAGES) expect(result[table].dropped).not.toContain(young.parts[table]);
    expect(await exists(young.parts.messages)).toBe(true);
  });
});
