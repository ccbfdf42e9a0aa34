import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request } from 'node:http';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

async function get(app: TestApp, path: string, key?: string): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${app.url}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

function expectErrorBody(body: any, code: string): void {
  expect(Array.isArray(body.errors)).toBe(true);
  expect(body.errors[0]).toEqual(expect.objectContaining({ code, title: expect.any(String) }));
}

describe('API key authentication, account scoping and the per-key rate limit', () => {
  let db: TestDatabase;
  let app: TestApp;
  let limited: TestApp;
  let guarded: TestApp;
  let accounts: AccountsService;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url });
    limited = await startTestApp({ databaseUrl: db.url, env: { API_RATE_LIMIT_PER_MINUTE: '3' } });
    guarded = await startTestApp({ databaseUrl: db.url, env: { API_AUTH_FAILURES_PER_MINUTE: '3' } });
    accounts = app.app.get(AccountsService);
  });
  afterAll(async () => {
    await limited?.close();
    await guarded?.close();
    await app?.close();
    await db?.drop();
  });

  it('no key, a malformed header, an unknown key and a revoked key are all 401 with errors[]', async () => {
    const { api_key, api_key_id } = await accounts.createAccount('alice');
    expect((await get(app, '/v2/api_keys', api_key)).status).toBe(200);

    const none = await get(app, '/v2/api_keys');
    expect(none.status).toBe(401);
    expectErrorBody(none.body, 'unauthorized');

    const basic = await fetch(`${app.url}/v2/api_keys`, { headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } });
    expect(basic.status).toBe(401);
    expectErrorBody(await basic.json(), 'unauthorized');

    const unknown = await get(app, '/v2/api_keys', `olk_${'x'.repeat(43)}`);
    expect(unknown.status).toBe(401);
    expectErrorBody(unknown.body, 'unauthorized');

    await accounts.revokeApiKey(api_key_id);
    const revoked = await get(app, '/v2/api_keys', api_key);
    expect(revoked.status).toBe(401);
    expectErrorBody(revoked.body, 'unauthorized');
  });

  it("another account's API key is 404, exactly like one that does not exist; lists show only one's own", async () => {
    const alice = await accounts.createAccount('alice');
    const bob = await accounts.createAccount('bob');

    const own = await get(app, `/v2/api_keys/${alice.api_key_id}`, alice.api_key);
    expect(own.status).toBe(200);
    expect(own.body.data).toEqual(expect.objectContaining({ id: alice.api_key_id, record_type: 'api_key', revoked_at: null }));
    expect(own.body.data.prefix).toBe(alice.api_key.slice(0, own.body.data.prefix.length));
    expect(JSON.stringify(own.body)).not.toContain(alice.api_key);

    const foreign = await get(app, `/v2/api_keys/${bob.api_key_id}`, alice.api_key);
    const missing = await get(app, `/v2/api_keys/key_doesnotexist`, alice.api_key);
    expect(foreign.status).toBe(404);
    expectErrorBody(foreign.body, 'not_found');
    expect(missing.status).toBe(404);
    expect(foreign.body.errors[0].code).toBe(missing.body.errors[0].code);

    const list = await get(app, '/v2/api_keys', alice.api_key);
    expect(list.body.data.map((k: { id: string }) => k.id)).toEqual([alice.api_key_id]);
    expect(list.body.meta).toEqual({ next_cursor: null });
  });

  it('past the per-key limit a request is 429 with Retry-After; another key is not affected', async () => {
    const { api_key } = await accounts.createAccount('chatty');
    const other = await accounts.createAccount('quiet');
    // The window is a clock minute: 7 requests fall in at most two windows, so with a limit of 3
    // at least one window overflows wherever the minute boundary falls.
    const statuses: number[] = [];
    let rejected: Awaited<ReturnType<typeof get>> | undefined;
    for (let i = 0; i < 7; i++) {
      const res = await get(limited, '/v2/api_keys', api_key);
      statuses.push(res.status);
      if (res.status === 429) rejected ??= res;
    }
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(3);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(6);
    expect(rejected).toBeDefined();
    const retryAfter = Number(rejected!.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expectErrorBody(rejected!.body, 'rate_limited');

    expect((await get(limited, '/v2/api_keys', other.api_key)).status).toBe(200);
  });

  it('issue 25: made-up keys from one address are 429 with Retry-After past the per-address budget; a valid key from that address still passes, another address still gets 401', async () => {
    const { api_key } = await accounts.createAccount('nat-neighbour');
    // The window is a clock minute: 7 failures fall in at most two windows, so with a budget of 3
    // at least one window overflows wherever the minute boundary falls.
    const replies: Awaited<ReturnType<typeof get>>[] = [];
    for (let i = 0; i < 7; i++) replies.push(await get(guarded, '/v2/api_keys', `olk_guess${i}`));
    const statuses = replies.map((r) => r.status);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(3);
    const throttled = replies.find((r) => r.status === 429);
    expect(throttled).toBeDefined();
    expect(Number(throttled!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(throttled!.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expectErrorBody(throttled!.body, 'rate_limited');
    // Throttled right now (a minute boundary may have passed: guess until it is) ...
    let now = replies[6];
    for (let i = 0; i < 5 && now.status !== 429; i++) now = await get(guarded, '/v2/api_keys', `olk_again${i}`);
    expect(now.status).toBe(429);
    // ... yet the real key from the same address is served, and is not counted as a failure.
    expect((await get(guarded, '/v2/api_keys', api_key)).status).toBe(200);
    // Another (loopback) address has a budget of its own.
    expect(await statusFrom('127.0.0.2', guarded, '/v2/api_keys', 'olk_elsewhere')).toBe(401);
  });
});

/** A GET sent from a given local address (any of 127.0.0.0/8 is this machine). */
function statusFrom(localAddress: string, app: TestApp, path: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${app.url}${path}`, { localAddress, headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}
