import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { MalformedWebhook } from '../carrier-adapter.js';
import { isObject, optionalText, text, type Json } from '../shape.js';
import { callCarrier, CarrierUnavailableError, isRetryableStatus, readJson } from '../message-sender.js';
import { expectOk, type HeldNumber, type NumberProvider, type NumberSearch, type OfferedNumber, type OrderedNumber, type OrderPlacement } from '../number-provider.js';

interface TelnyxNumberOrder {
  id?: string;
  status?: string;
  phone_numbers?: { phone_number?: string; status?: string }[];
}

/** A number order as a webhook carries it, its shape checked (MalformedWebhook names what is wrong). */
export function readNumberOrder(payload: Json, path: string): TelnyxNumberOrder {
  const numbers = payload.phone_numbers;
  if (numbers !== undefined && !Array.isArray(numbers)) throw new MalformedWebhook(`${path}.phone_numbers must be an array`);
  return {
    id: text(payload, 'id', path),
    status: text(payload, 'status', path),
    phone_numbers: (numbers ?? []).map((n: unknown, i: number) => {
      if (!isObject(n)) throw new MalformedWebhook(`${path}.phone_numbers[${i}] must be an object`);
      return { phone_number: text(n, 'phone_number', `${path}.phone_numbers[${i}]`), status: optionalText(n, 'status') };
    }),
  };
}

/** Telnyx number order words: `pending`, then `success` or `failure` for the order and each number. */
export function telnyxPlacement(order: TelnyxNumberOrder): OrderPlacement {
  if (typeof order.id !== 'string') throw new CarrierUnavailableError('Telnyx answered a number order without an id');
  if (order.status === 'pending') return { outcome: 'pending', carrierOrderId: order.id };
  const numbers: OrderedNumber[] = (order.phone_numbers ?? []).map((n) => ({
    phoneNumber: String(n.phone_number),
    bought: order.status === 'success' && (n.status === undefined || n.status === 'success'),
    // n.id names the order's line, not the phone number: release looks the number up by itself.
    error: n.status === 'success' ? undefined : `Telnyx number status ${n.status ?? order.status}`,
  }));
  return { outcome: 'settled', carrierOrderId: order.id, numbers };
}

/** Telnyx API v2 numbers: /available_phone_numbers, /number_orders, /phone_numbers. */
@Injectable()
export class TelnyxNumbers implements NumberProvider {
  readonly carrier = 'telnyx' as const;

  constructor(private readonly config: AppConfig) {}

  private call(path: string, init: RequestInit = {}): Promise<Response> {
    return callCarrier(`${this.config.telnyxApiUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${this.config.TELNYX_API_KEY}`, accept: 'application/json', ...(init.body ? { 'content-type': 'application/json' } : {}), ...init.headers },
    });
  }

  private async json(path: string, init?: RequestInit): Promise<Record<string, unknown>> {
    const response = await this.call(path, init);
    const body = await readJson(response);
    expectOk('Telnyx', response, body);
    return body;
  }

  async search(query: NumberSearch): Promise<OfferedNumber[]> {
    const params = new URLSearchParams({ 'filter[country_code]': query.country, 'filter[limit]': String(query.limit) });
    if (query.areaCode) params.set('filter[national_destination_code]', query.areaCode);
    if (query.contains) params.set('filter[phone_number][contains]', query.contains);
    for (const feature of query.features) params.append('filter[features][]', feature);
    const body = await this.json(`/available_phone_numbers?${params}`);
    const data = (body.data as { phone_number?: string; features?: { name?: string }[]; region_information?: { region_name?: string }[] }[] | undefined) ?? [];
    return data.map((n) => ({
      phoneNumber: String(n.phone_number),
      features: (n.features ?? []).map((f) => f.name).filter((f): f is 'sms' | 'voice' => f === 'sms' || f === 'voice'),
      region: n.region_information?.[0]?.region_name ?? null,
    }));
  }

  async order(orderId: string, _country: string, phoneNumbers: string[]): Promise<OrderPlacement> {
    // customer_reference is our order id: an order placed before a lost answer is found, not placed again.
    const found = await this.json(`/number_orders?${new URLSearchParams({ 'filter[customer_reference]': orderId })}`);
    const [existing] = (found.data as TelnyxNumberOrder[] | undefined) ?? [];
    if (existing) return telnyxPlacement(existing);
    const response = await this.call('/number_orders', {
      method: 'POST',
      headers: { 'idempotency-key': orderId },
      body: JSON.stringify({
        phone_numbers: phoneNumbers.map((phone_number) => ({ phone_number })),
        customer_reference: orderId,
        connection_id: this.config.TELNYX_CONNECTION_ID,
        messaging_profile_id: this.config.TELNYX_MESSAGING_PROFILE_ID,
      }),
    });
    const body = await readJson(response);
    if (response.ok) return telnyxPlacement((body.data ?? {}) as TelnyxNumberOrder);
    if (isRetryableStatus(response.status)) throw new CarrierUnavailableError(`Telnyx answered ${response.status}`);
    const [first] = (body.errors as { detail?: string; title?: string }[] | undefined) ?? [];
    const error = first?.detail ?? first?.title ?? `Telnyx answered ${response.status}`;
    return { outcome: 'settled', numbers: phoneNumbers.map((phoneNumber) => ({ phoneNumber, bought: false, error })) };
  }

  async orderStatus(carrierOrderId: string): Promise<OrderPlacement> {
    const body = await this.json(`/number_orders/${encodeURIComponent(carrierOrderId)}`);
    return telnyxPlacement((body.data ?? {}) as TelnyxNumberOrder);
  }

  async release(number: HeldNumber): Promise<void> {
    const id = number.carrierNumberId ?? (await this.listHeld(number.phoneNumber))[0]?.carrierNumberId;
    if (!id) return;
    const response = await this.call(`/phone_numbers/${encodeURIComponent(id)}`, { method: 'DELETE' });
    if (response.status === 404) return;
    expectOk('Telnyx', response, await readJson(response));
  }

  async listHeld(phoneNumber?: string): Promise<HeldNumber[]> {
    const params = new URLSearchParams({ 'page[size]': '250' });
    if (phoneNumber) params.set('filter[phone_number]', phoneNumber);
    const body = await this.json(`/phone_numbers?${params}`);
    return ((body.data as { id?: string; phone_number?: string }[] | undefined) ?? []).map((n) => ({ phoneNumber: String(n.phone_number), carrierNumberId: n.id }));
  }
}
