import { declareCustomerEventTypes } from '../webhooks/event-types.js';

/** The customer events entitlements emits (docs/contract.md, "Customer webhooks"). */
export const ENTITLEMENT_EVENT_TYPES = declareCustomerEventTypes(['entitlement.granted'] as const);

declare module '../webhooks/event-types.js' {
  interface CustomerEventTypesByModule {
    entitlements: (typeof ENTITLEMENT_EVENT_TYPES)[number];
  }
}
