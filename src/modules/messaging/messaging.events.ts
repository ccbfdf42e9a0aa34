import { declareCustomerEventTypes } from '../webhooks/event-types.js';

/** The customer events messaging emits (docs/contract.md, "Customer webhooks"). */
export const MESSAGING_EVENT_TYPES = declareCustomerEventTypes(['message.received', 'message.sent', 'message.delivered', 'message.failed', 'message.opted_out', 'message.opted_in', 'message.cancelled'] as const);

declare module '../webhooks/event-types.js' {
  interface CustomerEventTypesByModule {
    messaging: (typeof MESSAGING_EVENT_TYPES)[number];
  }
}
