import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { generateSecret, signV1, webhookHeaders } from '../signing.js';

const BODY = JSON.stringify({ type: 'message.received', timestamp: '2030-01-15T12:00:00.000Z', data: { id: 'msg_1', text: 'héllo 😀' } });
const ID = 'evt_01hzzzzzzzzzzzzzzzzzzzzzzz';
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

describe('generateSecret', () => {
  it('is whsec_ + base64 of 24 random bytes', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(24);
  });

  it('never repeats', () => {
    const secrets = new Set(Array.from({ length: 1_000 }, generateSecret));
    expect(secrets.size).toBe(1_000);
  });

  it('is accepted as a key by the standardwebhooks package', () => {
    expect(() => new Webhook(generateSecret())).not.toThrow();
  });
});

describe('signatures, checked by standardwebhooks Webhook.verify', () => {
  it('one secret: the headers verify and the payload comes back', () => {
    const secret = generateSecret();
    const headers = webhookHeaders([secret], ID, nowSeconds(), BODY);
    expect(headers['webhook-id']).toBe(ID);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
  });

  it('signV1 equals the package’s own Webhook.sign', () => {
    const secret = generateSecret();
    const ts = nowSeconds();
    expect(signV1(secret, ID, ts, BODY)).toBe(new Webhook(secret).sign(ID, new Date(ts * 1000), BODY));
  });

  it('a secret without the whsec_ prefix signs the same (its base64 is the key)', () => {
    const secret = generateSecret();
    expect(signV1(secret.slice('whsec_'.length), ID, 1_900_000_000, BODY)).toBe(signV1(secret, ID, 1_900_000_000, BODY));
  });

  it('rejects a wrong secret, a changed body, id or timestamp', () => {
    const secret = generateSecret();
    const ts = nowSeconds();
    const headers = webhookHeaders([secret], ID, ts, BODY);
    const verifier = new Webhook(secret);
    expect(() => new Webhook(generateSecret()).verify(BODY, headers)).toThrow();
    expect(() => verifier.verify(BODY.replace('msg_1', 'msg_2'), headers)).toThrow();
    expect(() => verifier.verify(BODY, { ...headers, 'webhook-id': 'evt_other' })).toThrow();
    expect(() => verifier.verify(BODY, { ...headers, 'webhook-timestamp': String(ts + 1) })).toThrow();
  });

  it('signs the exact body bytes: the same JSON re-serialized does not verify', () => {
    const secret = generateSecret();
    const headers = webhookHeaders([secret], ID, nowSeconds(), BODY);
    expect(() => new Webhook(secret).verify(JSON.stringify(JSON.parse(BODY), null, 1), headers)).toThrow();
  });

  it('rotation: two secrets give two space-separated signatures, each verifying alone', () => {
    const [oldSecret, newSecret] = [generateSecret(), generateSecret()];
    const headers = webhookHeaders([oldSecret, newSecret], ID, nowSeconds(), BODY);
    const signatures = headers['webhook-signature'].split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures[0]).not.toBe(signatures[1]);
    expect(new Webhook(oldSecret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(new Webhook(newSecret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(() => new Webhook(generateSecret()).verify(BODY, headers)).toThrow();
  });

  it('once rotation ends (only the new secret), the old one no longer verifies', () => {
    const [oldSecret, newSecret] = [generateSecret(), generateSecret()];
    const headers = webhookHeaders([newSecret], ID, nowSeconds(), BODY);
    expect(() => new Webhook(newSecret).verify(BODY, headers)).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(BODY, headers)).toThrow();
  });

  it('the timestamp header is whole seconds, as standardwebhooks expects', () => {
    const secret = generateSecret();
    const ts = nowSeconds();
    const headers = webhookHeaders([secret], ID, ts, BODY);
    expect(headers['webhook-timestamp']).toBe(String(ts));
    const stale = webhookHeaders([secret], ID, ts - 3_600, BODY);
    expect(() => new Webhook(secret).verify(BODY, stale)).toThrow(/timestamp/i);
  });
});
