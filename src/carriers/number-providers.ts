import { Injectable } from '@nestjs/common';
import type { CarrierName } from './normalized-event.js';
import type { NumberProvider } from './number-provider.js';
import { TelnyxNumbers } from './telnyx/telnyx-numbers.js';
import { TwilioNumbers } from './twilio/twilio-numbers.js';
import { VonageNumbers } from './vonage/vonage-numbers.js';

/** The numbers API of each carrier. */
@Injectable()
export class NumberProviders {
  private readonly byCarrier: Record<CarrierName, NumberProvider>;

  constructor(telnyx: TelnyxNumbers, twilio: TwilioNumbers, vonage: VonageNumbers) {
    this.byCarrier = { telnyx, twilio, vonage };
  }

  for(carrier: CarrierName): NumberProvider {
    return this.byCarrier[carrier];
  }
}

export const NUMBER_PROVIDERS = [NumberProviders, TelnyxNumbers, TwilioNumbers, VonageNumbers];
