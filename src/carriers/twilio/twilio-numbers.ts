import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { callCarrier, CarrierUnavailableError, isRetryableStatus, readJson } from '../message-sender.js';
import { expectOk, type HeldNumber, type NumberFeature, type NumberProvider, type NumberSearch, type OfferedNumber, type OrderedNumber, type OrderPlacement } from '../number-provider.js';

interface TwilioIncoming {
  sid?: string;
  phone_number?: string;
}

/** Twilio's AvailablePhoneNumbers and IncomingPhoneNumbers resources, basic auth, form-encoded writes. */
@Injectable()
export class TwilioNumbers implements NumberProvider {
  readonly carrier = 'twilio' as const;

  constructor(private readonly config: AppConfig) {}

  private get account(): string {
    return `${this.config.twilioApiUrl}/2010-04-01/Accounts/${encodeURIComponent(this.config.TWILIO_ACCOUNT_SID)}`;
  }

  private call(path: string, init: RequestInit = {}): Promise<Response> {
    const auth = Buffer.from(`${this.config.TWILIO_ACCOUNT_SID}:${this.config.TWILIO_AUTH_TOKEN}`).toString('base64');
    return callCarrier(`${this.account}${path}`, {
      ...init,
      headers: { authorization: `Basic ${auth}`, ...(init.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...init.headers },
    });
  }

  private async json(path: string): Promise<Record<string, unknown>> {
    const response = await this.call(path);
    const body = await readJson(response);
    expectOk('Twilio', response, body);
    return body;
  }

  async search(query: NumberSearch): Promise<OfferedNumber[]> {
    const params = new URLSearchParams({ PageSize: String(query.limit) });
    if (query.areaCode) params.set('AreaCode', query.areaCode);
    if (query.contains) params.set('Contains', query.contains);
    if (query.features.includes('sms')) params.set('SmsEnabled', 'true');
    if (query.features.includes('voice')) params.set('VoiceEnabled', 'true');
    const body = await this.json(`/AvailablePhoneNumbers/${encodeURIComponent(query.country)}/Local.json?${params}`);
    const offered = (body.available_phone_numbers as { phone_number?: string; region?: string; capabilities?: { SMS?: boolean; sms?: boolean; voice?: boolean } }[] | undefined) ?? [];
    return offered.map((n) => ({
      phoneNumber: String(n.phone_number),
      features: [...(n.capabilities?.SMS || n.capabilities?.sms ? ['sms' as const] : []), ...(n.capabilities?.voice ? ['voice' as const] : [])] satisfies NumberFeature[],
      region: n.region ?? null,
    }));
  }

  /** One purchase per number; a number our account already holds (a purchase whose answer was lost) is reported bought. */
  async order(orderId: string, _country: string, phoneNumbers: string[]): Promise<OrderPlacement> {
    const numbers: OrderedNumber[] = [];
    for (const phoneNumber of phoneNumbers) numbers.push(await this.buy(orderId, phoneNumber));
    return { outcome: 'settled', numbers };
  }

  private async buy(orderId: string, phoneNumber: string): Promise<OrderedNumber> {
    const [held] = await this.listHeld(phoneNumber);
    if (held) return { phoneNumber, bought: true, carrierNumberId: held.carrierNumberId };
    const base = this.config.publicBaseUrl;
    // No idempotency header: CreateIncomingPhoneNumber declares none (I-Twilio-Idempotency-Token
    // is one Twilio sends on its own webhooks); the lookup above is what makes a repeat safe.
    const response = await this.call('/IncomingPhoneNumbers.json', {
      method: 'POST',
      body: new URLSearchParams({
        PhoneNumber: phoneNumber,
        FriendlyName: orderId,
        SmsUrl: `${base}/webhooks/twilio/messaging`,
        SmsMethod: 'POST',
        VoiceUrl: `${base}/webhooks/twilio/voice`,
        VoiceMethod: 'POST',
        StatusCallback: `${base}/webhooks/twilio/voice/status`,
      }).toString(),
    });
    const body = await readJson(response);
    if (response.ok) return { phoneNumber, bought: true, carrierNumberId: typeof body.sid === 'string' ? body.sid : undefined };
    if (isRetryableStatus(response.status)) throw new CarrierUnavailableError(`Twilio answered ${response.status}`);
    return { phoneNumber, bought: false, error: String(body.message ?? `Twilio answered ${response.status}`) };
  }

  async orderStatus(): Promise<OrderPlacement> {
    throw new Error('Twilio purchases settle at once: there is no pending order to ask about');
  }

  async findHeld(phoneNumber: string): Promise<HeldNumber | undefined> {
    return (await this.listHeld(phoneNumber)).find((n) => n.phoneNumber === phoneNumber && n.carrierNumberId);
  }

  /** DeleteIncomingPhoneNumber by its PN sid; 404 for a sid Twilio gave us: deleted already (a lost answer). */
  async release(number: HeldNumber & { carrierNumberId: string }): Promise<void> {
    const response = await this.call(`/IncomingPhoneNumbers/${encodeURIComponent(number.carrierNumberId)}.json`, { method: 'DELETE' });
    if (response.status === 404) return;
    expectOk('Twilio', response, await readJson(response));
  }

  async listHeld(phoneNumber?: string): Promise<HeldNumber[]> {
    const params = new URLSearchParams({ PageSize: '1000' });
    if (phoneNumber) params.set('PhoneNumber', phoneNumber);
    const body = await this.json(`/IncomingPhoneNumbers.json?${params}`);
    if (!Array.isArray(body.incoming_phone_numbers)) throw new CarrierUnavailableError('Twilio answered IncomingPhoneNumbers without incoming_phone_numbers');
    return (body.incoming_phone_numbers as TwilioIncoming[]).map((n) => ({ phoneNumber: String(n.phone_number), carrierNumberId: n.sid }));
  }
}
