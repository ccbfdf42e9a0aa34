import { Injectable, ServiceUnavailableException } from '@nestjs/common';
import { CarrierUnavailableError } from '../../carriers/message-sender.js';
import { CarrierRefusedError, NUMBER_FEATURES, type NumberFeature, type NumberSearch } from '../../carriers/number-provider.js';
import { NumberProviders } from '../../carriers/number-providers.js';
import { CARRIER_NAMES, type CarrierName } from '../../carriers/carrier-name.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { invalidParameter } from '../../platform/http/query-params.js';
import { CURRENCY } from '../billing/usage-ledger.js';
import { COUNTRY_PATTERN } from './number-order.dto.js';
import type { AvailablePhoneNumberView } from './number-order.dto.js';

export const MAX_SEARCH_LIMIT = 50;
const DIGITS = /^\d{1,15}$/;

/** The search's query parameters, checked: each bad one is a 422 naming it. */
export function parseSearch(query: Record<string, unknown>): NumberSearch & { carrier: CarrierName } {
  const text = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined || value === '') return undefined;
    if (typeof value !== 'string') throw invalidParameter(name, `${name} must be given once`);
    return value;
  };
  const carrier = text('carrier') ?? 'telnyx';
  if (!(CARRIER_NAMES as readonly string[]).includes(carrier)) throw invalidParameter('carrier', `carrier must be one of ${CARRIER_NAMES.join(', ')}`);
  const country = text('country') ?? 'US';
  if (!COUNTRY_PATTERN.test(country)) throw invalidParameter('country', 'country must be an ISO 3166-1 alpha-2 code such as US');
  const areaCode = text('area_code');
  if (areaCode !== undefined && !/^\d{1,5}$/.test(areaCode)) throw invalidParameter('area_code', 'area_code must be 1 to 5 digits');
  const contains = text('contains');
  if (contains !== undefined && !DIGITS.test(contains)) throw invalidParameter('contains', 'contains must be 1 to 15 digits');
  const features = (text('features') ?? '').split(',').filter(Boolean);
  const unknown = features.find((f) => !(NUMBER_FEATURES as readonly string[]).includes(f));
  if (unknown !== undefined) throw invalidParameter('features', `features must be a comma-separated list of ${NUMBER_FEATURES.join(', ')}`);
  const limitText = text('limit') ?? '10';
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_SEARCH_LIMIT) throw invalidParameter('limit', `limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}`);
  return { carrier: carrier as CarrierName, country, areaCode, contains, features: features as NumberFeature[], limit };
}

/** Numbers a carrier offers, in one shape whatever the carrier, priced at our monthly rental. */
@Injectable()
export class NumberSearchService {
  constructor(
    private readonly providers: NumberProviders,
    private readonly config: AppConfig,
  ) {}

  async search(query: NumberSearch & { carrier: CarrierName }): Promise<AvailablePhoneNumberView[]> {
    try {
      const offered = await this.providers.for(query.carrier).search(query);
      return offered.slice(0, query.limit).map((n) => ({
        record_type: 'available_phone_number' as const,
        phone_number: n.phoneNumber,
        carrier: query.carrier,
        features: NUMBER_FEATURES.filter((f) => n.features.includes(f)),
        region: n.region,
        monthly_price_micros: this.config.PRICE_NUMBER_MONTH_MICROS,
        currency: CURRENCY,
      }));
    } catch (err) {
      if (err instanceof CarrierUnavailableError) {
        throw new ServiceUnavailableException({ code: 'carrier_unavailable', title: 'Carrier unavailable', detail: `${query.carrier} did not answer the search; retry shortly` });
      }
      if (err instanceof CarrierRefusedError) throw invalidParameter('country', `${query.carrier} refused the search (${err.status}): check country, area_code and contains`);
      throw err;
    }
  }
}
