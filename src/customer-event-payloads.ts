import type { Type } from '@nestjs/common';
import { CallView } from './modules/calls/call-view.js';
import { EntitlementView } from './modules/entitlements/entitlement-view.js';
import { MessageView } from './modules/messaging/message-view.js';
import { NumberOrderView } from './modules/numbers/number-order.dto.js';
import { PhoneNumberView } from './modules/numbers/phone-number.dto.js';
import { OptOutView } from './modules/messaging/opt-out-view.js';
import type { CustomerEventType } from './modules/webhooks/event-types.js';

export interface CustomerEventPayload {
  /** The resource in `data`, as the REST API returns it. */
  data: Type;
  /** When the event is sent, completing "Sent when …". */
  when: string;
}

/**
 * What a customer's endpoint receives for each event type: the webhooks section of the API
 * description is generated from this. A type listed in CUSTOMER_EVENT_TYPES without an entry
 * here does not compile (and src/__tests__/customer-event-payloads.spec.ts says which).
 */
export const CUSTOMER_EVENT_PAYLOADS = {
  'message.received': { data: MessageView, when: 'an inbound SMS to one of your numbers has been recorded' },
  'message.sent': { data: MessageView, when: 'the carrier accepted an outbound message' },
  'message.delivered': { data: MessageView, when: 'the carrier reports an outbound message delivered (final)' },
  'message.failed': { data: MessageView, when: 'an outbound message failed: refused by the carrier, undeliverable, or the carrier stayed unavailable (final)' },
  'message.opted_out': { data: OptOutView, when: 'a handset replied STOP (or STOPALL, UNSUBSCRIBE, CANCEL, END, QUIT, REVOKE, OPTOUT) to one of your numbers; once per change, however often the keyword is repeated' },
  'message.cancelled': { data: MessageView, when: 'a queued or scheduled message was cancelled before its dispatch took it (final; never sent, never billed)' },
  'message.opted_in': { data: OptOutView, when: 'an opted-out handset replied START (or UNSTOP, YES); once per change' },
  'call.initiated': { data: CallView, when: 'a call to or from one of your numbers started ringing' },
  'call.answered': { data: CallView, when: 'a call was answered: a target was joined to the caller (the bridge), the voicemail answered, or a call your side placed was picked up. Once per call, never for a leg later written off by the join timeout; a call that ends answered before the join was reported gets it just before call.completed' },
  'call.completed': { data: CallView, when: 'an answered call ended; its minutes are billed' },
  'call.missed': { data: CallView, when: 'a call ended before anyone answered' },
  'call.failed': { data: CallView, when: 'a call your side placed could not be dialed: the carrier refused the dial or never answered it (final)' },
  'call.voicemail': { data: CallView, when: 'a voicemail was recorded (voicemail_url)' },
  'call.transcribed': { data: CallView, when: "an ended call's transcript is complete (transcript)" },
  'entitlement.granted': { data: EntitlementView, when: 'a paid invoice granted a prepaid bundle (once per invoice and type, however often the billing provider told us)' },
  'order.completed': { data: NumberOrderView, when: 'a number order succeeded: at least one number was bought and is yours (each number of the order says); once per order' },
  'order.failed': { data: NumberOrderView, when: 'a number order failed: the carrier bought none of its numbers (error says why); once per order' },
  'number.released': { data: PhoneNumberView, when: 'a number you released was let go at the carrier (after any call on it ended); once' },
} satisfies Record<CustomerEventType, CustomerEventPayload>;
