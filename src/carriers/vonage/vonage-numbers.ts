import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { callCarrier, CarrierUnavailableError, isRetryableStatus, readJson } from '../message-sender.js';
import { expectOk, type HeldNumber, type NumberProvider, type NumberSearch, type OfferedNumber, type OrderedNumber, type OrderPlacement } from '../number-provider.js';

/** Vonage writes msisdn without the `+`. */
const msisdn = (e164: string) => e164.replace(/^\+/, '');
const e164 = (vonage: unknown) => `+${String(vonage)}`;

/** The Vonage Numbers API: /number/search, /number/buy, /number/update, /number/cancel, /account/numbers. */
@Injectable()
export class VonageNumbers implements NumberProvider {
  readonly carrier = 'vonage' as const;

  constructor(private readonly config: AppConfig) {}

  private call(path: string, form?: Record<string, string>): Promise<Response> {
    const auth = Buffer.from(`${this.config.VONAGE_API_KEY}:${this.config.VONAGE_API_SECRET}`).toString('base64');
    return callCarrier(`${this.config.vonageNumbersApiUrl}${path}`, {
      method: form ? 'POST' : 'GET',
      headers: { authorization: `Basic ${auth}`, accept: 'application/json', ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
  }

  private async json(path: string, form?: Record<string, string>): Promise<Record<string, unknown>> {
    const response = await this.call(path, form);
    const body = await readJson(response);
    expectOk('Vonage', response, body);
    return body;
  }

  async search(query: NumberSearch): Promise<OfferedNumber[]> {
    const params = new URLSearchParams({ country: query.country, size: String(Math.min(query.limit, 100)) });
    // One pattern only: the contained digits (search_pattern=1), else the area code as a prefix of the national number.
    if (query.contains) params.set('pattern', query.contains), params.set('search_pattern', '1');
    else if (query.areaCode) params.set('pattern', query.areaCode), params.set('search_pattern', '1');
    if (query.features.length > 0) params.set('features', query.features.map((f) => f.toUpperCase()).join(','));
    const body = await this.json(`/number/search?${params}`);
    const offered = (body.numbers as { msisdn?: string; features?: string[] }[] | undefined) ?? [];
    return offered
      .map((n) => ({
        phoneNumber: e164(n.msisdn),
        features: (n.features ?? []).map((f) => f.toLowerCase()).filter((f): f is 'sms' | 'voice' => f === 'sms' || f === 'voice'),
        region: null,
      }))
      .filter((n) => !query.areaCode || !query.contains || n.phoneNumber.includes(query.areaCode));
  }

  /** One purchase per number, then linked to our application; a number our account already holds is reported bought. */
  async order(_orderId: string, country: string, phoneNumbers: string[]): Promise<OrderPlacement> {
    const numbers: OrderedNumber[] = [];
    for (const phoneNumber of phoneNumbers) numbers.push(await this.buy(country, phoneNumber));
    return { outcome: 'settled', numbers };
  }

  private async buy(country: string, phoneNumber: string): Promise<OrderedNumber> {
    const [held] = await this.listHeld(phoneNumber);
    if (!held) {
      const response = await this.call('/number/buy', { country, msisdn: msisdn(phoneNumber) });
      const body = await readJson(response);
      if (isRetryableStatus(response.status)) throw new CarrierUnavailableError(`Vonage answered ${response.status}`);
      if (!response.ok || body['error-code'] !== '200') return { phoneNumber, bought: false, error: String(body['error-code-label'] ?? `Vonage answered ${response.status}`) };
    }
    // Linking is repeated on a retry too: the answer that was lost may have been this one's.
    await this.json('/number/update', { country, msisdn: msisdn(phoneNumber), app_id: this.config.VONAGE_APPLICATION_ID });
    return { phoneNumber, bought: true, carrierNumberId: msisdn(phoneNumber) };
  }

  async orderStatus(): Promise<OrderPlacement> {
    throw new Error('Vonage purchases settle at once: there is no pending order to ask about');
  }

  async release(number: HeldNumber): Promise<void> {
    const response = await this.call('/number/cancel', { country: number.country ?? 'US', msisdn: msisdn(number.phoneNumber) });
    const body = await readJson(response);
    // 420: "number not found" in our account: released already.
    if (response.status === 420 || response.status === 404) return;
    expectOk('Vonage', response, body);
  }

  async listHeld(phoneNumber?: string): Promise<HeldNumber[]> {
    const params = new URLSearchParams({ size: '100' });
    if (phoneNumber) params.set('pattern', msisdn(phoneNumber)), params.set('search_pattern', '0');
    const body = await this.json(`/account/numbers?${params}`);
    return ((body.numbers as { msisdn?: string; country?: string }[] | undefined) ?? [])
      .map((n) => ({ phoneNumber: e164(n.msisdn), carrierNumberId: n.msisdn, country: n.country }))
      .filter((n) => !phoneNumber || n.phoneNumber === phoneNumber);
  }
}
