import { defineJob } from '../../platform/outbox/job-definition.js';

/**
 * Sends one outbound message through its number's carrier (external: guards its own writes).
 * Carrier 408/429/5xx and transport errors retry with backoff (~4 min in all); then the message fails.
 */
export const DispatchMessageJob = defineJob<{ messageId: string }>({ name: 'dispatch-message', queue: 'messaging', lane: 'bulk', mode: 'external', attempts: 8, backoffMs: 1000 });
