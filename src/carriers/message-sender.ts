import { CARRIER_SEND_TIMEOUT_MS } from '../platform/config/app-config.js';
import type { CarrierName } from './carrier-name.js';
import type { FailureReason } from './failure-reason.js';

export interface OutboundMessage {
  /**
   * Our message id. No carrier's send operation declares an idempotency key, so none is sent: the
   * id goes out as a reference each carrier echoes back (Twilio: in the per-message
   * StatusCallback URL; Telnyx: in the per-message webhook_url; Vonage: client_ref), by which a
   * receipt or a lookup names the message whatever the outcome of our request.
   */
  id: string;
  from: string;
  to: string;
  text: string;
}

/** The carrier's answer to a send. A refusal (carrier 4xx) is an answer, not something to retry. */
export type SendResult =
  | { outcome: 'accepted'; carrierMessageId: string }
  | { outcome: 'rejected'; errorCode: string; errorDetail: string; reason?: FailureReason };

/**
 * The carrier did not take the request, as it documents (408, 429, 503) or as the transport
 * proves (the connection was never made: nothing was written): try again later.
 */
export class CarrierUnavailableError extends Error {}

/**
 * The request may have reached the carrier, and its answer is lost: the connection dropped after
 * the request was written, our timeout, or an answer that is no decision (500, 502, 504: a gateway
 * or the carrier failed after the request got in). Never a refusal and never sent again as such:
 * dispatch resolves it first (a receipt carrying our reference, a lookup).
 */
export class SendOutcomeUnknownError extends Error {}

/** What a carrier's lookup found of one of our messages. */
export interface FoundSend {
  /** The carrier's ids of what it holds for the message, best first (several only where the lookup cannot see our reference). */
  carrierMessageIds: string[];
}

/**
 * Our message id as it goes into a carrier's callback URL (its 26 characters after `msg_`: Twilio
 * refuses underscores in a StatusCallback URL), and back.
 */
export const MESSAGE_REFERENCE_PARAM = 'ref';
export function messageReference(messageId: string): string {
  return messageId.replace(/^msg_/, '');
}
export function messageIdFromReference(reference: string | null | undefined): string | undefined {
  return reference && /^[0-9a-z]{26}$/.test(reference) ? `msg_${reference}` : undefined;
}
/** The callback URL `base` (no query) naming our message. */
export function referencedUrl(base: string, messageId: string): string {
  return `${base}?${MESSAGE_REFERENCE_PARAM}=${messageReference(messageId)}`;
}
/** Our message id from a callback URL we gave (absolute, or a path with its query), if it names one. */
export function messageIdFromUrl(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return messageIdFromReference(new URL(url, 'http://reference.invalid').searchParams.get(MESSAGE_REFERENCE_PARAM));
  } catch {
    return undefined;
  }
}

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
  /** Throws CarrierUnavailableError (not taken: retry as before) or SendOutcomeUnknownError (resolve before any resend). */
  send(message: OutboundMessage): Promise<SendResult>;
  /**
   * The carrier's documented lookup for a message whose send outcome is unknown: what it holds of
   * `message` sent from `since` on, or undefined when it shows nothing. Throws
   * CarrierUnavailableError when it cannot be asked.
   */
  findSent(message: OutboundMessage, since: Date): Promise<FoundSend | undefined>;
}


/**
 * The outbound retry table (docs/exactly-once.md): 408, 429 and 5xx mean "not answered", so retry; any other
 * 4xx is the carrier's answer.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * What a send's answer that is not a success means: 408, 429 and 503 are the carrier declining
 * the request (CarrierUnavailableError, a 429 as CarrierThrottledError); 500, 502, 504 and any
 * other 5xx may come after the carrier took it (SendOutcomeUnknownError); undefined for a 4xx,
 * which is its refusal of the message.
 */
export function sendAnswerProblem(carrier: string, response: Response): Error | undefined {
  if (!isRetryableStatus(response.status)) return undefined;
  if (response.status === 408 || response.status === 429 || response.status === 503) return unavailable(carrier, response);
  return new SendOutcomeUnknownError(`${carrier} answered ${response.status}: the message may have been taken`);
}

/** Transport failures that prove nothing was written: the connection was never made. */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/** The error codes of a fetch failure and its causes (undici nests them). */
function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') codes.push(e.code);
  }
  return codes;
}

/**
 * A send's POST, with a deadline (`timeoutMs`, the answer's body included). A transport failure
 * before the connection was made is CarrierUnavailableError; any other (a reset after the request
 * was written, the timeout) is SendOutcomeUnknownError: only the carrier knows whether it took it.
 */
export async function sendToCarrier(url: string, init: RequestInit, timeoutMs: number): Promise<{ response: Response; body: Record<string, unknown> }> {
  try {
    const response = await fetch(url, { ...init, method: 'POST', redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    return { response, body: await readJson(response) };
  } catch (err) {
    const codes = errorCodes(err);
    if (codes.some((code) => NEVER_CONNECTED.has(code))) throw new CarrierUnavailableError(`carrier unreachable: ${codes.join(' / ')}`);
    throw new SendOutcomeUnknownError(`no answer from the carrier: ${(err as Error).name === 'TimeoutError' ? `none within ${timeoutMs} ms` : [(err as Error).message, ...codes].join(' / ')}`);
  }
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

/**
 * Pages a lookup follows at most, the first included: a lookup reads what the carrier lists of
 * the message's window (recent sends between the two numbers; Vonage: the account's outbound
 * records), and a message further back than this many pages is not seen (docs/exactly-once.md).
 */
export const LOOKUP_MAX_PAGES = 5;

/** One page of a lookup: its items, and the URL of the next page when the carrier says there is one. */
export interface LookupPage<T> {
  items: T[];
  next?: string;
}

/**
 * A lookup over the carrier's documented paging: `firstUrl`, then each `next` page `read` finds in
 * the page before, up to LOOKUP_MAX_PAGES; every page's items, in the carrier's order. Throws as
 * lookUpAtCarrier for any page (a lookup that cannot be completed shows nothing).
 */
export async function lookUpPages<T>(
  carrier: string, firstUrl: string, headers: Record<string, string>, timeoutMs: number, read: (body: Record<string, unknown>) => LookupPage<T>,
): Promise<T[]> {
  const items: T[] = [];
  for (let url: string | undefined = firstUrl, page = 0; url && page < LOOKUP_MAX_PAGES; page++) {
    const { items: found, next } = read(await lookUpAtCarrier(carrier, url, headers, timeoutMs));
    items.push(...found);
    url = next;
  }
  return items;
}

/** A lookup's GET (JSON); anything but a 2xx JSON answer is CarrierUnavailableError: the lookup could not be made, which shows nothing. */
async function lookUpAtCarrier(carrier: string, url: string, headers: Record<string, string>, timeoutMs: number): Promise<Record<string, unknown>> {
  const response = await callCarrier(url, { headers: { ...headers, accept: 'application/json' } }, timeoutMs);
  const body = await readJson(response).catch(() => ({}) as Record<string, unknown>);
  if (!response.ok || 'raw' in body) throw new CarrierUnavailableError(`${carrier} lookup answered ${response.status}`);
  return body;
}
