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

/** What the HTTP layer needs to send a response that may be a replay. */
interface Reply {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
}

/** Answers with `result`: its stored status, and `Idempotent-Replayed: true` when it is a replay. Returns the body. */
export function answerStored(reply: Reply, result: StoredResponse & { replayed: boolean }): unknown {
  reply.status(result.status);
  if (result.replayed) reply.header('idempotent-replayed', 'true');
  return result.body;
}

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
    // Retention only: decides nothing below. created_at < now() - 24 h: an expired key is
    // forgotten before it is claimed again (the same now() as the claim's, one transaction).
    await exec(tx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND created_at < now() - make_interval(hours => $3)`, [
      accountId,
      key,
      KEY_RETENTION_HOURS,
    ]);
    let stored: { claimed: boolean; fingerprint: string; response_status: number; response_body: unknown };
    try {
      // One statement, the guard: inserts the key, or waits for an uncommitted twin and then locks
      // and returns the committed key unchanged; claimed_by = this transaction tells which.
      ({
        rows: [stored],
      } = await exec<typeof stored>(
        tx,
        `INSERT INTO idempotency_keys AS k (account_id, key, fingerprint, claimed_by) VALUES ($1, $2, $3, pg_current_xact_id())
         ON CONFLICT (account_id, key) DO UPDATE SET claimed_by = k.claimed_by
         RETURNING coalesce(claimed_by = pg_current_xact_id(), false) AS claimed, fingerprint, response_status, response_body`,
        [accountId, key, requestFingerprint],
      ));
    } catch (err) {
      if ((err as { code?: string }).code === '55P03') {
        throw new ConflictException({ code: 'idempotency_key_in_use', title: 'Request in progress', detail: 'A request with this Idempotency-Key is still being processed; retry shortly' });
      }
      throw err;
    }
    if (stored.claimed) return { kind: 'new' };
    if (stored.fingerprint !== requestFingerprint) {
      throw new HttpException(
        { errors: [{ code: 'idempotency_key_reused', title: 'Idempotency-Key reused', detail: 'This Idempotency-Key was used with a different request', source: { header: 'Idempotency-Key' } }] },
        HttpStatus.UNPROCESSABLE_ENTITY,
      );
    }
    return { kind: 'replay', response: { status: stored.response_status, body: storedBody(stored.response_body) } };
  }

  /** Stores the response to replay, in the transaction that produced it. */
  async complete(tx: Tx, accountId: string, key: string, response: StoredResponse): Promise<void> {
    // Only the key this transaction claimed: a response is never written over another request's.
    const { affected } = await exec(
      tx,
      `UPDATE idempotency_keys SET response_status = $3, response_body = $4 WHERE account_id = $1 AND key = $2 AND claimed_by = pg_current_xact_id()`,
      // As one JSON string inside the jsonb: jsonb would sort an object's keys its own way, and a
      // replay must answer the first answer's document byte for byte, keys in the same order.
      [accountId, key, response.status, JSON.stringify(JSON.stringify(response.body))],
    );
    if (affected !== 1) throw new Error(`Idempotency-Key ${key} was not claimed by this transaction`);
  }

  /** Retention: forgets keys older than 24 h. */
  async cleanExpired(tx: Tx): Promise<number> {
    const { affected } = await exec(tx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [KEY_RETENTION_HOURS]);
    return affected;
  }
}

/** A stored body: the JSON text complete() keeps (rows stored before it kept the object itself). */
function storedBody(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}
