import { defineJob } from '../../platform/outbox/job-definition.js';

/**
 * Sends one outbound message through its number's carrier (external: guards its own writes).
 * Carrier 408/429/5xx and transport errors retry with backoff (~4 min in all); then the message fails.
 */
export const DispatchMessageJob = defineJob<{ messageId: string }>({ name: 'dispatch-message', queue: 'messaging', lane: 'bulk', mode: 'external', attempts: 8, backoffMs: 1000 });

/**
 * Sends one compliance reply (STOP/START confirmation, HELP): DispatchMessageJob's run, in a queue
 * of its own (its own BullMQ Worker), so a reply never waits behind the jobs of a number's
 * backlog (10,000 waiting messages are as many dispatch jobs ahead of it in `messaging`). Realtime
 * lane: what a handset waits for, and rare (one per keyword); carriers and US rules expect the
 * confirmation at once.
 */
export const DispatchReplyJob = defineJob<{ messageId: string }>({ name: 'dispatch-reply', queue: 'messaging-replies', lane: 'realtime', urgency: 'soon', mode: 'external', attempts: 8, backoffMs: 1000 });
