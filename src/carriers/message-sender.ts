import { CARRIER_SEND_TIMEOUT_MS } from '../platform/config/app-config.js';
import type { CarrierName } from './normalized-event.js';

export interface OutboundMessage {
  /** Our message id: passed to the carrier as its Idempotency-Key. */
  id: string;
  from: string;
  to: string;
  text: string;
}

/** The carrier's answer to a send. A refusal (carrier 4xx) is an answer, not something to retry. */
export type SendResult =
  | { outcome: 'accepted'; carrierMessageId: string }
  | { outcome: 'rejected'; errorCode: string; errorDetail: string };

/** The carrier could not answer (408, 429, 5xx, transport error): try again later. */
export class CarrierUnavailableError extends Error {}

/** Longest carrier Retry-After we honour as it is (a larger or unreadable one counts as this). */
export const MAX_RETRY_AFTER_SECONDS = 3600;
/** A 429 without a readable Retry-After waits this long. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

/** The carrier answered 429: too fast for it. Try again no sooner than `retryAfterSeconds`. */
export class CarrierThrottledError extends CarrierUnavailableError {
  constructor(
    carrier: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`${carrier} answered 429 (Retry-After ${retryAfterSeconds} s)`);
  }
}

/** A 429 as CarrierThrottledError (its Retry-After: seconds or an HTTP date), any other retryable status as CarrierUnavailableError. */
export function unavailable(carrier: string, response: Response): CarrierUnavailableError {
  if (response.status !== 429) return new CarrierUnavailableError(`${carrier} answered ${response.status}`);
  return new CarrierThrottledError(carrier, retryAfterSeconds(response.headers.get('retry-after')));
}

export function retryAfterSeconds(header: string | null, now = Date.now()): number {
  if (header === null || header.trim() === '') return DEFAULT_RETRY_AFTER_SECONDS;
  const seconds = /^\s*\d+(\.\d+)?\s*$/.test(header) ? Number(header) : (Date.parse(header) - now) / 1000;
  if (!Number.isFinite(seconds)) return DEFAULT_RETRY_AFTER_SECONDS;
  return Math.min(Math.max(seconds, 0), MAX_RETRY_AFTER_SECONDS);
}

export interface MessageSender {
  readonly carrier: CarrierName;
  send(message: OutboundMessage): Promise<SendResult>;
}


/**
 * The outbound retry table (docs/exactly-once.md): 408, 429 and 5xx mean "not answered", so retry; any other
 * 4xx is the carrier's answer.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** fetch with a deadline (`timeoutMs`, the answer's body included); transport failures become CarrierUnavailableError. */
export async function postToCarrier(url: string, init: RequestInit, timeoutMs = CARRIER_SEND_TIMEOUT_MS): Promise<Response> {
  return callCarrier(url, { ...init, method: 'POST' }, timeoutMs);
}

/** As postToCarrier, with the method in `init` (GET when none). */
export async function callCarrier(url: string, init: RequestInit, timeoutMs = CARRIER_SEND_TIMEOUT_MS): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new CarrierUnavailableError(`carrier unreachable: ${(err as Error).message}`);
  }
}

/** Reads a JSON body if there is one; carriers' error bodies are not always JSON. */
export async function readJson(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { raw: text.slice(0, 500) };
  }
}
