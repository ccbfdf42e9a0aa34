import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { AddressPolicy } from '../../../src/modules/webhooks/address-policy.js';
import { CustomerEvents } from '../../../src/modules/webhooks/customer-events.js';
import { honourRetryAfter, jittered } from '../../../src/modules/webhooks/retry-policy.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.js';

// Refusal only: these addresses are never connected to (this machine's network forbids it anyway).
const FORBIDDEN_URLS = ['http://10.0.0.1/hook', 'http://169.254.169.254/latest/meta-data', 'http://100.64.0.1/hook', 'http://[fd00::1]/hook', 'http://[::1]/hook'];

describe('address policy (SSRF guard)', () => {
  const policy = new AddressPolicy('');

  it.each([
    ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['192.168.1.1', 'private'], ['127.0.0.1', 'loopback'],
    ['169.254.169.254', 'link-local'], ['100.64.0.1', 'carrier-grade NAT'], ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'], ['240.0.0.1', 'reserved'], ['255.255.255.255', 'reserved'], ['192.0.2.10', 'documentation'],
    ['198.51.100.7', 'documentation'], ['203.0.113.9', 'documentation'], ['198.18.0.1', 'benchmarking'],
    ['::1', 'loopback'], ['::', 'unspecified'], ['fd00::1', 'unique local'], ['fc00::1', 'unique local'], ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'], ['2001:db8::1', 'documentation'], ['::ffff:10.0.0.1', 'private'], ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::a00:1', 'NAT64'],
  ])('refuses %s (%s)', (address, label) => {
    expect(policy.refusalFor(address)).toContain(label);
  });

  it.each(['93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('accepts public %s', (address) => {
    expect(policy.refusalFor(address)).toBeUndefined();
  });

  it('WEBHOOK_ALLOWED_CIDRS opens exactly the listed ranges', () => {
    const allowing = new AddressPolicy('127.0.0.0/8, ::1/128');
    expect(allowing.refusalFor('127.0.0.1')).toBeUndefined();
    expect(allowing.refusalFor('::1')).toBeUndefined();
    expect(allowing.refusalFor('10.0.0.1')).toContain('private');
    expect(() => new AddressPolicy('not-a-cidr')).toThrow(/WEBHOOK_ALLOWED_CIDRS/);
  });

  it('resolves the host on every call and refuses when any answer is forbidden (DNS rebinding)', async () => {
    const answers = [[{ address: '93.184.215.14', family: 4 }], [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.1', family: 4 }]];
    let calls = 0;
    const rebinding = new AddressPolicy('', async () => answers[Math.min(calls++, 1)]);
    await expect(rebinding.vet('customer.example')).resolves.toEqual({ address: '93.184.215.14', family: 4 });
    await expect(rebinding.vet('customer.example')).rejects.toThrow(/refused: customer.example resolves to address 10.0.0.1 is in the private range/);
    expect(calls).toBe(2);
  });

  it('rejects obvious literals at endpoint creation', () => {
    expect(policy.literalRefusal('[fd00::1]')).toContain('unique local');
    expect(policy.literalRefusal('localhost')).toContain('loopback');
    expect(policy.literalRefusal('example.com')).toBeUndefined();
  });
});

describe('retry policy', () => {
  it('jitters the schedule by at most 20%', () => {
    expect(jittered(10, () => 0)).toBe(8000);
    expect(jittered(10, () => 1)).toBe(12000);
    expect(jittered(0, () => 0.7)).toBe(0);
  });

  it('honours Retry-After clamped to [scheduled, 2 x scheduled]', () => {
    expect(honourRetryAfter(5000, undefined)).toBe(5000);
    expect(honourRetryAfter(5000, '1')).toBe(5000);
    expect(honourRetryAfter(5000, '7')).toBe(7000);
    expect(honourRetryAfter(5000, '3600')).toBe(10000);
    expect(honourRetryAfter(5000, new Date(1_000_000 + 8000).toUTCString(), 1_000_000)).toBe(8000);
    expect(honourRetryAfter(5000, 'garbage')).toBe(5000);
  });
});

describe('SSRF guard at delivery time', () => {
  let db: TestDatabase;
  let receiver: WebhookReceiver;
  let app: TestApp;
  let accountId: string;
  let apiKey: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startWebhookReceiver();
    // No allowlist: loopback is as forbidden as any private range.
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { WEBHOOK_ALLOWED_CIDRS: '', WEBHOOK_RETRY_SCHEDULE: '0' } });
    const created = await app.app.get(AccountsService).createAccount('ssrf');
    accountId = created.account.id;
    apiKey = created.api_key;
  });
  afterAll(async () => {
    await app?.close();
    await receiver.close();
    await db.drop();
  });

  it.each([...FORBIDDEN_URLS, 'http://127.0.0.1:8080/hook', 'http://localhost:8080/hook', 'ftp://example.com/x', 'https://user:pw@example.com/hook'])(
    'POST /v2/webhook_endpoints refuses %s with 422',
    async (url) => {
      const res = await fetch(`${app.url}/v2/webhook_endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url }),
      });
      expect(res.status).toBe(422);
      const body = (await res.json()) as { errors: Array<{ source: { pointer: string } }> };
      expect(body.errors[0].source.pointer).toBe('/url');
    },
  );

  it('refuses every forbidden address (and 127.0.0.1 without an allowlist) before connecting, with the reason on the attempt; 127.0.0.1 is reached once allowed', async () => {
    // Stored directly: an endpoint whose address became private after creation (DNS changed).
    const urls = [...FORBIDDEN_URLS, `${receiver.url}/hook`, `http://localhost:${new URL(receiver.url).port}/hook`];
    for (const [i, url] of urls.entries()) {
      await db.pool.query(`INSERT INTO webhook_endpoints (id, account_id, url, secret) VALUES ($1, $2, $3, 'whsec_dGVzdHRlc3R0ZXN0dGVzdA==')`, [`we_ssrf${i}`, accountId, url]);
    }
    const eventId = await app.app.get(UnitOfWork).run((tx) => app.app.get(CustomerEvents).emit(tx, accountId, 'call.completed', { id: 'call_1' }));
    const attempts = await waitFor(
      () => db.pool.query(`SELECT e.url, a.status_code, a.error FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.event_id = $1`, [eventId]).then((r) => r.rows),
      (rows) => rows.length === urls.length,
      { what: 'one refused attempt per endpoint' },
    );
    for (const attempt of attempts) {
      expect(attempt.status_code).toBeNull();
      expect(attempt.error).toMatch(/^refused: .* resolves to address .* is in the .* range .* and not in WEBHOOK_ALLOWED_CIDRS$/);
    }
    expect(attempts.find((a) => a.url.includes('169.254.169.254')).error).toContain('link-local');
    expect(attempts.find((a) => a.url.includes('100.64.0.1')).error).toContain('carrier-grade NAT');
    expect(receiver.requests).toHaveLength(0);
    expect(await db.count(`SELECT count(*) FROM webhook_deliveries WHERE event_id = $1 AND status = 'failed'`, [eventId])).toBe(urls.length);

    // The same endpoints under an allowlist that covers 127.0.0.0/8: only the receiver is reached.
    // (localhost may also resolve to ::1, outside that allowlist: that endpoint is deleted first.)
    const deleted = await fetch(`${app.url}/v2/webhook_endpoints/we_ssrf${urls.length - 1}`, { method: 'DELETE', headers: { authorization: `Bearer ${apiKey}` } });
    expect(deleted.status).toBe(200);
    await app.close();
    app = await startTestApp({ databaseUrl: db.url, relay: true, worker: true, env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8', WEBHOOK_RETRY_SCHEDULE: '0' } });
    const redeliver = await fetch(`${app.url}/v2/events/${eventId}/redeliver`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` } });
    expect(redeliver.status).toBe(202);
    await receiver.waitForRequests(1);
    await waitFor(() => db.count(`SELECT count(*) FROM webhook_deliveries WHERE event_id = $1 AND status = 'delivered'`, [eventId]), (c) => c === 1, { what: 'loopback endpoints delivered' });
    expect(receiver.requests.every((r) => r.headers['webhook-id'] === eventId)).toBe(true);
    await waitFor(() => db.count(`SELECT count(*) FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1 AND a.attempt = 2`, [eventId]), (c) => c === FORBIDDEN_URLS.length + 1, { what: 'second attempts recorded' });
    expect(await db.count(`SELECT count(*) FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1 AND a.attempt = 2 AND a.error LIKE 'refused:%'`, [eventId])).toBe(FORBIDDEN_URLS.length);
  });
});
