import { Injectable } from '@nestjs/common';
import type { CarrierName } from './normalized-event.js';
import type { MessageSender } from './message-sender.js';
import { TelnyxMessageSender } from './telnyx/telnyx-message-sender.js';
import { TwilioMessageSender } from './twilio/twilio-message-sender.js';
import { VonageMessageSender } from './vonage/vonage-message-sender.js';

/** The sender for a number's carrier. */
@Injectable()
export class MessageSenders {
  private readonly byCarrier: Record<CarrierName, MessageSender>;

  constructor(telnyx: TelnyxMessageSender, twilio: TwilioMessageSender, vonage: VonageMessageSender) {
    this.byCarrier = { telnyx, twilio, vonage };
  }

  for(carrier: CarrierName): MessageSender {
    return this.byCarrier[carrier];
  }
}
