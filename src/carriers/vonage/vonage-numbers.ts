import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { callCarrier, CarrierUnavailableError, isRetryableStatus, readJson } from '../message-sender.js';
import { CarrierRefusedError, digitsOf, expectOk, type HeldNumber, type NumberFeature, type NumberProvider, type NumberSearch, type OfferedNumber, type OrderedNumber, type OrderPlacement } from '../number-provider.js';

/** Vonage writes msisdn without the `+`. */
const msisdn = digitsOf;
const e164 = (vonage: unknown) => `+${String(vonage)}`;

/**
 * Country calling codes: Vonage's prefix search (search_pattern=0) matches the whole E.164
 * number, so an area code is searched as calling code + area code (US 312 → `1312`).
 */
const CALLING_CODES: Record<string, string> = {
  US: '1', CA: '1', PR: '1', GB: '44', IE: '353', DE: '49', FR: '33', ES: '34', IT: '39', NL: '31', BE: '32', AT: '43', CH: '41',
  SE: '46', NO: '47', DK: '45', FI: '358', PL: '48', PT: '351', AU: '61', NZ: '64', JP: '81', SG: '65', HK: '852', IL: '972', ZA: '27', BR: '55', MX: '52',
};

/** Numbers search `features` takes one of the published enum's values (`SMS`, `VOICE`, `SMS,VOICE`, …), never the caller's order. */
function featuresParam(features: NumberFeature[]): string | undefined {
  const sms = features.includes('sms');
  const voice = features.includes('voice');
  return sms && voice ? 'SMS,VOICE' : sms ? 'SMS' : voice ? 'VOICE' : undefined;
}

/** Vonage's largest page: a search filtered here as well asks for it, then keeps `limit`. */
const MAX_PAGE = 100;

/**
 * The Vonage Numbers API: /number/search, /number/buy, /number/update, /number/cancel, /account/numbers.
 *
 * Authentication: `Authorization: Basic base64(api_key:api_secret)`, as Vonage's current Numbers
 * API reference documents it (https://developer.vonage.com/en/api/numbers, "Authentication:
 * Authorization, Headers, Basic <base64>" on every operation). The 2021 OpenAPI description
 * (Nexmo/api-specification definitions/numbers.yml) lists only api_key/api_secret as query
 * parameters; the contract tier adds the header scheme to it, citing that reference
 * (test/fixtures/carrier-specs/README.md). We use the header because it keeps the secret out
 * of URLs and of every log that records them.
 */
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

  /**
   * search_pattern is 0 "starts with" (the whole E.164 number, calling code included), 1
   * "contains", 2 "ends with". An area code is a prefix: `pattern=1312&search_pattern=0`. With
   * both an area code and `contains`, Vonage takes one pattern: the prefix is searched (a full
   * page) and `contains` is applied here, so fewer than `limit` numbers may come back.
   */
  async search(query: NumberSearch): Promise<OfferedNumber[]> {
    const params = new URLSearchParams({ country: query.country });
    let prefix: string | undefined;
    if (query.areaCode) {
      const code = CALLING_CODES[query.country];
      if (!code) throw new CarrierRefusedError(422, `Vonage searches an area code as a prefix with the country calling code; ${query.country} is not a country we know the code of`);
      prefix = `${code}${query.areaCode}`;
      params.set('pattern', prefix), params.set('search_pattern', '0');
    } else if (query.contains) {
      params.set('pattern', query.contains), params.set('search_pattern', '1');
    }
    const filterHere = prefix !== undefined && query.contains !== undefined;
    params.set('size', String(filterHere ? MAX_PAGE : Math.min(query.limit, MAX_PAGE)));
    const features = featuresParam(query.features);
    if (features) params.set('features', features);
    const body = await this.json(`/number/search?${params}`);
    const offered = (body.numbers as { msisdn?: string; features?: string[] }[] | undefined) ?? [];
    return offered
      .filter((n) => typeof n.msisdn === 'string' && (!prefix || n.msisdn.startsWith(prefix)) && (!filterHere || n.msisdn.includes(query.contains!)))
      .slice(0, query.limit)
      .map((n) => ({
        phoneNumber: e164(n.msisdn),
        features: (n.features ?? []).map((f) => f.toLowerCase()).filter((f): f is 'sms' | 'voice' => f === 'sms' || f === 'voice'),
        region: null,
      }));
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

  async findHeld(phoneNumber: string): Promise<HeldNumber | undefined> {
    return (await this.listHeld(phoneNumber)).find((n) => n.phoneNumber === phoneNumber);
  }

  /**
   * cancelANumber by msisdn and country. Vonage answers 420 "method failed" for any refusal:
   * the number counts as released only when our account then no longer lists it (an earlier
   * cancel whose answer was lost); still listed, the refusal is an error.
   */
  async release(number: HeldNumber & { carrierNumberId: string }): Promise<void> {
    const response = await this.call('/number/cancel', { country: number.country ?? 'US', msisdn: number.carrierNumberId });
    const body = await readJson(response);
    if (response.ok && body['error-code'] === '200') return;
    if (response.status === 420 || (response.ok && body['error-code'] === '420')) {
      if (!(await this.findHeld(number.phoneNumber))) return;
      throw new CarrierRefusedError(420, `Vonage refused the cancel: ${String(body['error-code-label'] ?? 'method failed')}`);
    }
    expectOk('Vonage', response, body);
    throw new CarrierRefusedError(response.status, `Vonage answered the cancel with error-code ${String(body['error-code'])}`);
  }

  async listHeld(phoneNumber?: string): Promise<HeldNumber[]> {
    const params = new URLSearchParams({ size: String(MAX_PAGE) });
    if (phoneNumber) params.set('pattern', msisdn(phoneNumber)), params.set('search_pattern', '0');
    const body = await this.json(`/account/numbers?${params}`);
    return ((body.numbers as { msisdn?: string; country?: string }[] | undefined) ?? [])
      .map((n) => ({ phoneNumber: e164(n.msisdn), carrierNumberId: n.msisdn, country: n.country }))
      .filter((n) => !phoneNumber || n.phoneNumber === phoneNumber);
  }
}
