import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { CUSTOMER_EVENT_TYPES } from '../../../src/modules/webhooks/event-types.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { runCliHere } from '../../support/run-cli.js';

describe('webhook endpoints and events API', () => {
  let db: TestDatabase;
  let app: TestApp;
  let mine: { id: string; key: string };
  let theirs: { id: string; key: string };

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url });
    const accounts = app.app.get(AccountsService);
    const a = await accounts.createAccount('mine');
    const b = await accounts.createAccount('theirs');
    mine = { id: a.account.id, key: a.api_key };
    theirs = { id: b.account.id, key: b.api_key };
  });
  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  async function api(key: string | undefined, method: string, path: string, body?: unknown) {
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it('401 without a valid API key', async () => {
    expect((await api(undefined, 'GET', '/v2/webhook_endpoints')).status).toBe(401);
    expect((await api('olk_nope', 'POST', '/v2/webhook_endpoints', { url: 'https://example.com/h' })).status).toBe(401);
    expect((await api(undefined, 'GET', '/v2/events')).status).toBe(401);
  });

  it('creates, lists, reads, updates and deletes an endpoint; the secret only where named', async () => {
    const created = await api(mine.key, 'POST', '/v2/webhook_endpoints', { url: 'https://example.com/hooks', event_types: ['message.delivered'], description: 'prod' });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ url: 'https://example.com/hooks', event_types: ['message.delivered'], description: 'prod', enabled: true, disabled_reason: null });
    expect(created.body.data.id).toMatch(/^we_/);
    expect(created.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const id = created.body.data.id;

    const all = await api(mine.key, 'POST', '/v2/webhook_endpoints', { url: 'http://example.org/all' });
    expect(all.body.data.event_types).toEqual([...CUSTOMER_EVENT_TYPES]); // no event_types: every type

    const got = await api(mine.key, 'GET', `/v2/webhook_endpoints/${id}`);
    expect(got.body.data.secret).toBeUndefined();
    const page1 = await api(mine.key, 'GET', '/v2/webhook_endpoints?page[size]=1');
    expect(page1.body.data).toHaveLength(1);
    expect(page1.body.data[0].id).toBe(all.body.data.id);
    const page2 = await api(mine.key, 'GET', `/v2/webhook_endpoints?page[size]=1&page[after]=${page1.body.meta.next_cursor}`);
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual([id]);
    expect(page2.body.meta.next_cursor).toBeNull();
    expect((await api(mine.key, 'GET', '/v2/webhook_endpoints?page[size]=251')).status).toBe(422);

    const patched = await api(mine.key, 'PATCH', `/v2/webhook_endpoints/${id}`, { event_types: ['call.completed', 'call.missed'], description: null });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ url: 'https://example.com/hooks', event_types: ['call.completed', 'call.missed'], description: null });
    expect((await api(mine.key, 'GET', `/v2/webhook_endpoints/${id}/secret`)).body.data.secret).toBe(created.body.data.secret);

    expect((await api(mine.key, 'DELETE', `/v2/webhook_endpoints/${id}`)).status).toBe(200);
    expect((await api(mine.key, 'GET', `/v2/webhook_endpoints/${id}`)).status).toBe(404);
    expect((await api(mine.key, 'DELETE', `/v2/webhook_endpoints/${id}`)).status).toBe(404);
  });

  it.each([
    [{ url: 'not a url' }, '/url'],
    [{ url: 'ftp://example.com/x' }, '/url'],
    [{ url: 'https://u:p@example.com/x' }, '/url'],
    [{ url: 'http://192.168.0.10/x' }, '/url'],
    [{}, '/url'],
    [{ url: 'https://example.com/x', event_types: ['message.exploded'] }, '/event_types'],
    [{ url: 'https://example.com/x', surprise: true }, '/surprise'],
  ])('422 with a pointer for %j', async (body, pointer) => {
    const res = await api(mine.key, 'POST', '/v2/webhook_endpoints', body);
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { source: { pointer: string } }) => e.source.pointer)).toContain(pointer);
    expect(await db.count(`SELECT count(*) FROM webhook_endpoints WHERE url = $1`, [(body as { url?: string }).url ?? ''])).toBe(0);
  });

  it("another account's endpoint or event is 404 on every route", async () => {
    const ep = (await api(theirs.key, 'POST', '/v2/webhook_endpoints', { url: 'https://example.com/theirs' })).body.data;
    for (const [method, path, body] of [
      ['GET', `/v2/webhook_endpoints/${ep.id}`],
      ['PATCH', `/v2/webhook_endpoints/${ep.id}`, { description: 'mine now' }],
      ['DELETE', `/v2/webhook_endpoints/${ep.id}`],
      ['POST', `/v2/webhook_endpoints/${ep.id}/enable`],
      ['POST', `/v2/webhook_endpoints/${ep.id}/rotate_secret`],
      ['GET', `/v2/webhook_endpoints/${ep.id}/secret`],
      ['GET', `/v2/webhook_endpoints/${ep.id}/deliveries`],
    ] as Array<[string, string, unknown?]>) {
      const res = await api(mine.key, method, path, body);
      expect([method, path, res.status]).toEqual([method, path, 404]);
      expect(res.body.errors[0].code).toBe('not_found');
    }
    const evt = await app.app.get(UnitOfWork).run((tx) => app.app.get(CustomerEvents).emit(tx, theirs.id, 'call.missed', { id: 'call_x' }));
    expect((await api(mine.key, 'GET', `/v2/events/${evt}`)).status).toBe(404);
    expect((await api(mine.key, 'POST', `/v2/events/${evt}/redeliver`)).status).toBe(404);
    expect((await api(theirs.key, 'GET', `/v2/events/${evt}`)).status).toBe(200);
    expect((await api(theirs.key, 'GET', `/v2/webhook_endpoints/${ep.id}/secret`)).status).toBe(200);
  });

  it('lists events newest first by type with cursor pagination, each with event_version and data', async () => {
    const uow = app.app.get(UnitOfWork);
    const events = app.app.get(CustomerEvents);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await uow.run((tx) => events.emit(tx, mine.id, i % 2 ? 'message.sent' : 'message.received', { n: i })));
    // Ids are time-ordered (ms, then random): newest first is descending id order.
    const newestFirst = [ids[0], ids[2], ids[4]].sort().reverse();
    const received = await api(mine.key, 'GET', '/v2/events?type=message.received&page[size]=2');
    expect(received.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(0, 2));
    expect(received.body.data[0]).toMatchObject({ id: newestFirst[0], type: 'message.received', event_version: 1, data: { n: ids.indexOf(newestFirst[0]) } });
    const rest = await api(mine.key, 'GET', `/v2/events?type=message.received&page[size]=2&page[after]=${received.body.meta.next_cursor}`);
    expect(rest.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(2));
    expect(rest.body.meta.next_cursor).toBeNull();
    expect((await api(mine.key, 'GET', '/v2/events?type=nope')).status).toBe(422);
    const one = await api(mine.key, 'GET', `/v2/events/${ids[1]}`);
    expect(one.body.data).toMatchObject({ id: ids[1], type: 'message.sent', data: { n: 1 } });
    expect(Array.isArray(one.body.data.deliveries)).toBe(true);
    expect((await api(mine.key, 'GET', '/v2/webhook_endpoints/we_missing/deliveries?status=bogus')).status).toBe(422);
  });

  it('Swagger documents the webhook routes with examples', async () => {
    const doc = (await (await fetch(`${app.url}/docs-json`)).json()) as { paths: Record<string, unknown>; components: { schemas: Record<string, { properties: Record<string, { example?: unknown }> }> } };
    for (const path of ['/v2/webhook_endpoints', '/v2/webhook_endpoints/{id}', '/v2/webhook_endpoints/{id}/enable', '/v2/webhook_endpoints/{id}/rotate_secret', '/v2/webhook_endpoints/{id}/secret', '/v2/webhook_endpoints/{id}/deliveries', '/v2/events', '/v2/events/{id}', '/v2/events/{id}/redeliver']) {
      expect(doc.paths[path]).toBeDefined();
    }
    expect(doc.components.schemas.CreateEndpointDto.properties.url.example).toBe('https://example.com/webhooks/onceline');
    expect((await fetch(`${app.url}/docs`)).status).toBe(200);
  });

  it('CLI endpoints:enable re-enables an endpoint and prints one JSON document', async () => {
    const ep = (await api(mine.key, 'POST', '/v2/webhook_endpoints', { url: 'https://example.com/cli' })).body.data;
    await db.pool.query(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'test' WHERE id = $1`, [ep.id]);
    const run = await runCliHere(['endpoints:enable', ep.id, '--json'], { DATABASE_URL: db.url, REDIS_URL: app.config.REDIS_URL, LOG_LEVEL: 'error' });
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.endpoint).toMatchObject({ id: ep.id, enabled: true, disabled_reason: null, resumed_deliveries: 0 });
    expect((await api(mine.key, 'GET', `/v2/webhook_endpoints/${ep.id}`)).body.data.enabled).toBe(true);
  });
});
