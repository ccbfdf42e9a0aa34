import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A new endpoint secret in the Standard Webhooks form: `whsec_` + base64 of 24 random bytes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

/** One `v1,<base64>` signature: HMAC-SHA256 keyed by the secret's bytes over `id.timestamp.body`. */
export function signV1(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The Standard Webhooks headers of one attempt; several secrets (rotation) give space-separated signatures. */
export function webhookHeaders(secrets: string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => signV1(s, id, timestamp, body)).join(' '),
  };
}
