import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

describe('error responses', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    // This file breaks the database on purpose: the app's error logs of those 500s are expected, not output to read.
    app = await startTestApp({ databaseUrl: db.url, env: { LOG_LEVEL: 'fatal' } });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('an unknown route is a 404 in the errors[] shape, with a request id header', async () => {
    const res = await fetch(`${app.url}/v2/no_such_thing`);
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{16}$/);
    const body: any = await res.json();
    expect(body.errors).toEqual([expect.objectContaining({ code: 'not_found', title: expect.any(String) })]);
  });

  it('a JSON route given a body of another type (curl -d alone: a form) is 415 naming application/json, before anything is written', async () => {
    const { api_key, account } = await accounts().createAccount('content types');
    const auth = { authorization: `Bearer ${api_key}` };
    const body = JSON.stringify({ carrier: 'telnyx', phone_numbers: ['+15550007777'] });
    for (const type of [undefined, 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
      const res = await fetch(`${app.url}/v2/phone_number_orders`, { method: 'POST', headers: { ...auth, ...(type && { 'content-type': type }) }, body });
      expect(res.status).toBe(415);
      expect(await res.json()).toEqual({
        errors: [{ code: 'unsupported_media_type', title: expect.any(String), detail: expect.stringContaining('Content-Type: application/json'), source: { header: 'Content-Type' } }],
      });
    }
    expect(await db.count(`SELECT count(*) FROM phone_numbers WHERE account_id = $1`, [account.id])).toBe(0);
    const json = await fetch(`${app.url}/v2/phone_number_orders`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json; charset=utf-8' }, body });
    expect(json.status).toBe(202);
    // A body-less POST and carrier webhooks (forms) are not held to it.
    const twilio = await fetch(`${app.url}/webhooks/twilio/messaging`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=b' });
    expect(twilio.status).not.toBe(415);
  });

  it('an unexpected error is a 500 that carries the request id and says nothing internal', async () => {
    const { api_key } = await accounts().createAccount('victim');
    // Break the schema under the running app: the key lookup now fails with a SQL error whose
    // text (table, column, query) must not reach the caller.
    await db.pool.query(`ALTER TABLE api_keys RENAME COLUMN key_hash TO key_hash_moved`);
    try {
      const res = await fetch(`${app.url}/v2/api_keys`, { headers: { authorization: `Bearer ${api_key}` } });
      expect(res.status).toBe(500);
      const requestId = res.headers.get('x-request-id');
      expect(requestId).toMatch(/^req_/);
      const text = await res.text();
      const body = JSON.parse(text);
      expect(body).toEqual({ errors: [{ code: 'internal_error', title: 'Internal error', meta: { request_id: requestId } }] });
      for (const leak of ['key_hash', 'api_keys', 'column', 'SELECT', 'QueryFailedError', '.ts:', '.js:', 'node_modules']) {
        expect(text).not.toContain(leak);
      }
      // Two failures, two ids: the id points at one log line, not at the route.
      const again = await fetch(`${app.url}/v2/api_keys`, { headers: { authorization: `Bearer ${api_key}` } });
      expect(((await again.json()) as any).errors[0].meta.request_id).not.toBe(requestId);
    } finally {
      await db.pool.query(`ALTER TABLE api_keys RENAME COLUMN key_hash_moved TO key_hash`);
    }
    expect((await fetch(`${app.url}/v2/api_keys`, { headers: { authorization: `Bearer ${api_key}` } })).status).toBe(200);
  });

  function accounts(): AccountsService {
    return app.app.get(AccountsService);
  }
});
