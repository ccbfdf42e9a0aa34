import { Module, type Provider, type Type } from '@nestjs/common';
import type { CarrierName } from './carrier-name.js';
import type { MessageSender } from './message-sender.js';
import { MessageSenders } from './message-senders.js';
import type { NumberProvider } from './number-provider.js';
import { NumberProviders } from './number-providers.js';
import { StripeAdapter } from './stripe/stripe-adapter.js';
import { TelnyxAdapter } from './telnyx/telnyx-adapter.js';
import { TelnyxCallControl } from './telnyx/telnyx-call-control.js';
import { TelnyxMessageSender } from './telnyx/telnyx-message-sender.js';
import { TelnyxNumbers } from './telnyx/telnyx-numbers.js';
import { TwilioAdapter } from './twilio/twilio-adapter.js';
import { TwilioMessageSender } from './twilio/twilio-message-sender.js';
import { TwilioNumbers } from './twilio/twilio-numbers.js';
import { TwilioTwiml } from './twilio/twilio-twiml.js';
import { VonageAdapter } from './vonage/vonage-adapter.js';
import { VonageMessageSender } from './vonage/vonage-message-sender.js';
import { VonageNumbers } from './vonage/vonage-numbers.js';

/** What one carrier brings: its webhook adapter, SMS sender, numbers API and any voice pieces. */
interface CarrierKit {
  name: CarrierName;
  adapter: Type;
  sender: Type<MessageSender>;
  numbers: Type<NumberProvider>;
  voice: Type[];
}

/** Every carrier we speak to: adding one is its folder under src/carriers/ and one line here. */
const CARRIERS: CarrierKit[] = [
  { name: 'telnyx', adapter: TelnyxAdapter, sender: TelnyxMessageSender, numbers: TelnyxNumbers, voice: [TelnyxCallControl] },
  { name: 'twilio', adapter: TwilioAdapter, sender: TwilioMessageSender, numbers: TwilioNumbers, voice: [TwilioTwiml] },
  { name: 'vonage', adapter: VonageAdapter, sender: VonageMessageSender, numbers: VonageNumbers, voice: [] },
];

/** A carrier's piece of one kind, by carrier name, from the instances Nest made in CARRIERS order. */
const byCarrier = <T>(instances: T[]) => Object.fromEntries(CARRIERS.map((carrier, i) => [carrier.name, instances[i]])) as Record<CarrierName, T>;

const kitProviders: Type[] = CARRIERS.flatMap((carrier) => [carrier.adapter, carrier.sender, carrier.numbers, ...carrier.voice]);
const lookups: Provider[] = [
  { provide: MessageSenders, useFactory: (...senders: MessageSender[]) => new MessageSenders(byCarrier(senders)), inject: CARRIERS.map((c) => c.sender) },
  { provide: NumberProviders, useFactory: (...numbers: NumberProvider[]) => new NumberProviders(byCarrier(numbers)), inject: CARRIERS.map((c) => c.numbers) },
];
/** The billing provider's webhook verifier (Stripe). */
const billing: Type[] = [StripeAdapter];

/**
 * The carriers, provided once for every feature module: webhook adapters (Ingest), senders
 * (Messaging), numbers APIs (Numbers), call control and TwiML (Calls), the Stripe verifier
 * (Entitlements). Features import this module and inject what they use.
 */
@Module({
  providers: [...kitProviders, ...lookups, ...billing],
  exports: [...kitProviders, MessageSenders, NumberProviders, ...billing],
})
export class CarriersModule {}
