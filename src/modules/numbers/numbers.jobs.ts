import { defineJob } from '../../platform/outbox/job-definition.js';

/** Number orders, polls and releases at the carriers. */
const queue = 'numbers';

/**
 * Places one number order at its carrier (external: the carrier's own idempotency makes a repeat buy nothing twice).
 * Carrier 408/429/5xx and transport errors retry with backoff, then the order fails (nothing bought is lost: a repeat finds it).
 */
export const PlaceNumberOrderJob = defineJob<{ orderId: string }>({ name: 'place-number-order', queue, lane: 'bulk', mode: 'external', attempts: 8, backoffMs: 1000 });

/**
 * Asks the carrier about an order still pending (Telnyx number_order.complete is late).
 * `poll`: 1 for the first poll; the order is written off as failed after NUMBER_ORDER_MAX_POLLS.
 * `poll` 0: asked once, now, because a number_order.complete did not say how the order ended
 * (`carrierOrderId`: the order the callback named, if it did); the regular polls go on.
 */
export const PollNumberOrderJob = defineJob<{ orderId: string; poll: number; carrierOrderId?: string }>({ name: 'poll-number-order', queue, lane: 'bulk', mode: 'external', attempts: 8, backoffMs: 1000 });

/** Releases one number at its carrier once no call is in progress on it (external). */
export const ReleaseNumberJob = defineJob<{ numberId: string }>({ name: 'release-number', queue, lane: 'bulk', mode: 'external', attempts: 8, backoffMs: 1000 });

/**
 * Stores the carrier's id of each number an order bought whose id the order did not give
 * (Telnyx: looked up by ListPhoneNumbers), so release names it. Retried while the carrier does
 * not list a number yet; release looks an id still missing up itself.
 */
export const StoreNumberIdsJob = defineJob<{ orderId: string }>({ name: 'store-number-ids', queue, lane: 'bulk', mode: 'external', attempts: 8, backoffMs: 1000 });
