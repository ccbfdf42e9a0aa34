import { CarrierUnavailableError, isRetryableStatus } from './message-sender.js';
import type { CarrierName } from './carrier-name.js';

export type NumberFeature = 'sms' | 'voice';
export const NUMBER_FEATURES = ['sms', 'voice'] as const satisfies readonly NumberFeature[];

export interface NumberSearch {
  /** ISO 3166-1 alpha-2. */
  country: string;
  areaCode?: string;
  /** Digits the number contains. */
  contains?: string;
  features: NumberFeature[];
  limit: number;
}

/** A number the carrier offers, in our words. */
export interface OfferedNumber {
  phoneNumber: string;
  features: NumberFeature[];
  region: string | null;
}

/** What the carrier said about one number of an order. */
export interface OrderedNumber {
  phoneNumber: string;
  bought: boolean;
  /**
   * The carrier's id of the number, what release names: Twilio's PN sid, Vonage's msisdn (with
   * the number's country). Absent for Telnyx, whose orders name their own lines, not the phone
   * number resource: it is found after settlement (findHeld) and stored then.
   */
  carrierNumberId?: string;
  error?: string;
}

/** The carrier's answer to an order: settled now, or (Telnyx) later by number_order.complete or a poll. */
export type OrderPlacement =
  | { outcome: 'settled'; carrierOrderId?: string; numbers: OrderedNumber[] }
  | { outcome: 'pending'; carrierOrderId: string };

/** One of our numbers at the carrier. */
export interface HeldNumber {
  phoneNumber: string;
  carrierNumberId?: string;
  country?: string;
}

/**
 * Search, order and release at one carrier. Carrier vocabulary stays in the implementations
 * (src/carriers/<carrier>/). Errors: CarrierUnavailableError means "not answered, try again";
 * every other carrier answer is returned.
 */
export interface NumberProvider {
  readonly carrier: CarrierName;
  search(query: NumberSearch): Promise<OfferedNumber[]>;
  /**
   * Orders `phoneNumbers` (of `country`) as our order `orderId`, configured to send their
   * webhooks to us. Safe to repeat after a lost answer: what the first call bought is found and
   * reported, never bought twice (Telnyx: customer_reference = orderId; Twilio, Vonage: by number).
   */
  order(orderId: string, country: string, phoneNumbers: string[]): Promise<OrderPlacement>;
  /**
   * The current state of a pending order (Telnyx), by the carrier's order id, or when that is
   * not known yet by our order id (customer_reference); settled carriers never return pending.
   */
  orderStatus(order: { orderId: string; carrierOrderId?: string }): Promise<OrderPlacement>;
  /**
   * Our number at the carrier, found by a lookup the carrier documents (exact match on the
   * number), with the id release names; undefined when the carrier shows no such number of ours.
   */
  findHeld(phoneNumber: string): Promise<HeldNumber | undefined>;
  /**
   * Releases the number named by its carrier id (as findHeld or the order gave it). A carrier
   * that answers "no such number" for that id released it before (an earlier release whose
   * answer was lost): that resolves; a refusal throws CarrierRefusedError.
   */
  release(number: HeldNumber & { carrierNumberId: string }): Promise<void>;
  /** Every number our carrier account holds. */
  listHeld(): Promise<HeldNumber[]>;
}

/** The digits of an E.164 number, as lookups that refuse a `+` want it. */
export const digitsOf = (e164: string): string => e164.replace(/^\+/, '');

/** A carrier refusal of a search, release or listing (4xx that is not 408/429), which is final. */
export class CarrierRefusedError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Throws CarrierUnavailableError (retry) or CarrierRefusedError for an answer that is not 2xx. */
export function expectOk(carrier: string, response: Response, body: unknown): void {
  if (response.ok) return;
  if (isRetryableStatus(response.status)) throw new CarrierUnavailableError(`${carrier} answered ${response.status}`);
  throw new CarrierRefusedError(response.status, `${carrier} refused (${response.status}): ${JSON.stringify(body).slice(0, 300)}`);
}
