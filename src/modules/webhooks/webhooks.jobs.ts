import { defineJob } from '../../platform/outbox/job-definition.js';

/** Customer webhook deliveries have their own queue: slow customer servers only ever hold up each other. */
const queue = 'webhooks';

/**
 * One HTTP attempt of one customer webhook delivery (external: guards its own writes).
 * BullMQ retries only infrastructure errors here; the customer's retry schedule is one outbox job per attempt.
 * The first attempt of an event's deliveries runs in the worker that created them (one hop less).
 * `eventId`: the delivery's event, whose id's time is the delivery's partition key (migration
 * 0047), so the attempt finds its delivery in one partition. Absent in jobs written before it was
 * added: those find it by id alone, probing every partition (DeliveryAttemptHandler.load).
 */
export const WebhookDeliveryAttemptJob = defineJob<{ deliveryId: string; eventId?: string; round: number; attempt: number }>({ name: 'webhook-delivery-attempt', queue, lane: 'bulk', mode: 'external', attempts: 5, backoffMs: 1000, runsAfterCommit: true });

/** Fails an endpoint's deliveries parked longer than WEBHOOK_PARKED_RETENTION_DAYS. */
export const WebhookParkedExpiryJob = defineJob<{ endpointId: string }>({ name: 'webhook-parked-expiry', queue, lane: 'bulk', mode: 'transactional', attempts: 5, backoffMs: 1000 });
