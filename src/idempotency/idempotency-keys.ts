import { ConflictException, HttpException, HttpStatus, Injectable, BadRequestException } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { exec, type Tx } from '../database/tx.js';

const KEY_PATTERN = /^[A-Za-z0-9_:-]{1,255}$/;
/** How long a request with a key may wait for a concurrent twin before answering 409. */
const TWIN_WAIT = '10s';
export const KEY_RETENTION_HOURS = 24;

export interface StoredResponse {
  status: number;
  body: unknown;
}

export type KeyClaim = { kind: 'new' } | { kind: 'replay'; response: StoredResponse };

/** The header value without optional quotes, validated; undefined when absent. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const raw = (Array.isArray(header) ? header[0] : header).trim().replace(/^"(.*)"$/, '$1');
  if (!KEY_PATTERN.test(raw)) {
    throw new BadRequestException({
      errors: [{ code: 'invalid_idempotency_key', title: 'Invalid Idempotency-Key', detail: 'Idempotency-Key must be 1 to 255 of A-Z a-z 0-9 _ : -', source: { header: 'Idempotency-Key' } }],
    });
  }
  return raw;
}

/** A request's fingerprint: method, path and the body with its keys sorted. */
export function fingerprint(method: string, path: string, body: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value && typeof value === 'object'
        ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
        : value;
  return createHash('sha256').update(JSON.stringify([method, path, canonical(body)])).digest('hex');
}

/**
 * Idempotency-Key outcomes (IETF draft semantics). The key row is inserted in the same
 * transaction as the work it guards, so the unique index is the lock: a concurrent twin waits on
 * it, then replays the committed response; if the first request rolled back, the twin does the work.
 */
@Injectable()
export class IdempotencyKeys {
  async claim(tx: Tx, accountId: string, key: string, requestFingerprint: string): Promise<KeyClaim> {
    await exec(tx, `SET LOCAL lock_timeout = '${TWIN_WAIT}'`);
    // created_at < now() - 24 h: an expired key is forgotten before it is claimed again.
    await exec(tx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created_at < now() - make_interval(hours => $3)`, [
      accountId,
      key,
      KEY_RETENTION_HOURS,
    ]);
    let inserted: number;
    try {
      // ON CONFLICT DO NOTHING waits for an uncommitted twin, then sees its committed row.
      ({ affected: inserted } = await exec(
        tx,
        `INSERT INTO idempotency_keys (account_id, key, fingerprint) VALUES ($1, $2, $3) ON CONFLICT (account_id, key) DO NOTHING`,
        [accountId, key, requestFingerprint],
      ));
    } catch (err) {
      if ((err as { code?: string }).code === '55P03') {
        throw new ConflictException({ code: 'idempotency_key_in_use', title: 'Request in progress', detail: 'A request with this Idempotency-Key is still being processed; retry shortly' });
      }
      throw err;
    }
    if (inserted === 1) return { kind: 'new' };
    const { rows } = await exec<{ fingerprint: string; response_status: number; response_body: unknown }>(
      tx,
      `SELECT fingerprint, response_status, response_body FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
      [accountId, key],
    );
    const stored = rows[0];
    if (stored.fingerprint !== requestFingerprint) {
      throw new HttpException(
        { errors: [{ code: 'idempotency_key_reused', title: 'Idempotency-Key reused', detail: 'This Idempotency-Key was used with a different request', source: { header: 'Idempotency-Key' } }] },
        HttpStatus.UNPROCESSABLE_ENTITY,
      );
    }
    return { kind: 'replay', response: { status: stored.response_status, body: stored.response_body } };
  }

  /** Stores the response to replay, in the transaction that produced it. */
  async complete(tx: Tx, accountId: string, key: string, response: StoredResponse): Promise<void> {
    await exec(tx, `UPDATE idempotency_keys SET response_status = $3, response_body = $4 WHERE account_id = $1 AND key = $2`, [
      accountId,
      key,
      response.status,
      JSON.stringify(response.body),
    ]);
  }

  /** Retention: forgets keys older than 24 h. */
  async cleanExpired(tx: Tx): Promise<number> {
    const { affected } = await exec(tx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [KEY_RETENTION_HOURS]);
    return affected;
  }
}
