import { declareCustomerEventTypes } from '../webhooks/event-types.js';

/** The customer events numbers emits (docs/contract.md, "Customer webhooks"). */
export const NUMBER_EVENT_TYPES = declareCustomerEventTypes(['order.completed', 'order.failed', 'number.released'] as const);

declare module '../webhooks/event-types.js' {
  interface CustomerEventTypesByModule {
    numbers: (typeof NUMBER_EVENT_TYPES)[number];
  }
}
