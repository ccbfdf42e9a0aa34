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
