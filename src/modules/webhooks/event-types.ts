/**
 * The customer event types of the published contract (docs/contract.md, "Customer webhooks").
 * Endpoints subscribe to these; emitters may only emit these. Adding a type is additive.
 */
export const CUSTOMER_EVENT_TYPES = [
  'message.received',
  'message.sent',
  'message.delivered',
  'message.failed',
  'message.opted_out',
  'message.opted_in',
  'message.cancelled',
  'call.initiated',
  'call.answered',
  'call.completed',
  'call.missed',
  'call.failed',
  'call.voicemail',
  'call.transcribed',
  'entitlement.granted',
  'order.completed',
  'order.failed',
  'number.released',
] as const;

export type CustomerEventType = (typeof CUSTOMER_EVENT_TYPES)[number];

/** Version of the event payload shape; stored on every outbound_events row. */
export const CUSTOMER_EVENT_VERSION = 1;

export function isCustomerEventType(value: unknown): value is CustomerEventType {
  return typeof value === 'string' && (CUSTOMER_EVENT_TYPES as readonly string[]).includes(value);
}
