import { countSegments } from '../telephony/segments.js';

/** A message as the emulated carrier knows it (either direction). */
export interface SandboxMessage {
  /** The carrier's message id (Telnyx uuid, Twilio SM…). */
  id: string;
  from: string;
  to: string;
  text: string;
  parts: number;
  encoding: string;
  createdAt: Date;
  /** What the sender gave to find it by: its callback URL (Telnyx webhook_url, Twilio StatusCallback) or Vonage client_ref. */
  reference?: string;
}

export function sandboxMessage(id: string, from: string, to: string, text: string, reference?: string): SandboxMessage {
  const { segments, encoding } = countSegments(text);
  return { id, from, to, text, parts: segments, encoding, createdAt: new Date(), ...(reference !== undefined && { reference }) };
}

/** Step delays of an outbound series: sent almost at once, the final receipt after `receiptDelayMs`. */
export const SENT_AFTER_MS = 20;
/**
 * A contradiction comes this long after the terminal receipt, as a late carrier correction does:
 * long enough for the app to have acted on the terminal word (the app orders receipts by when it
 * processes them, so one racing the terminal receipt could win instead; `reorder` allows that).
 */
export const CONTRADICTION_AFTER_MS = 1000;
