import { declareCustomerEventTypes } from '../webhooks/event-types.js';

/** The customer events calls emits (docs/contract.md, "Customer webhooks"). */
export const CALL_EVENT_TYPES = declareCustomerEventTypes(['call.initiated', 'call.answered', 'call.completed', 'call.missed', 'call.failed', 'call.voicemail', 'call.transcribed'] as const);

declare module '../webhooks/event-types.js' {
  interface CustomerEventTypesByModule {
    calls: (typeof CALL_EVENT_TYPES)[number];
  }
}
