import { Injectable } from '@nestjs/common';
import type { CarrierName } from './carrier-name.js';
import type { MessageSender } from './message-sender.js';

/** The sender for a number's carrier (made by CarriersModule from its list of carriers). */
@Injectable()
export class MessageSenders {
  constructor(private readonly byCarrier: Record<CarrierName, MessageSender>) {}

  for(carrier: CarrierName): MessageSender {
    return this.byCarrier[carrier];
  }
}
