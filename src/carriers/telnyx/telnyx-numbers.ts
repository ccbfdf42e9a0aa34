import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { MalformedWebhook } from '../carrier-adapter.js';
import { isObject, optionalText, text, type Json } from '../shape.js';
import { callCarrier, CarrierUnavailableError, isRetryableStatus, readJson } from '../message-sender.js';
import { digitsOf, expectOk, type HeldNumber, type NumberProvider, type NumberSearch, type OfferedNumber, type OrderedNumber, type OrderPlacement } from '../number-provider.js';

/** A number order (NumberOrderWithPhoneNumbers): every field optional, as the document has it. */
export interface TelnyxNumberOrder {
  id?: string;
  status?: string;
  customer_reference?: string;
  phone_numbers: { phone_number: string; status?: string }[];
}

/** How a number order ended, when it has: the numbers as the order says, or undefined while it has not. */
export type TelnyxOrderOutcome = { carrierOrderId?: string; numbers: OrderedNumber[] } | undefined;

const FINAL = new Set(['success', 'failure']);

/** Statuses of a phone number resource (GET /phone_numbers) that are not a number our account holds. */
const NOT_HELD = new Set(['deleted', 'purchase-failed', 'port-failed', 'ported-out']);

/**
 * A number order as the number_order.complete callback carries it (webhook numberOrderStatusUpdate,
 * payload NumberOrderWithPhoneNumbers). The document requires none of its fields, and its example
 * carries no order `id`, `status` or `record_type`: only customer_reference and each number's
 * phone_number and status are read; `id` and `status` are used when present.
 */
export function readNumberOrder(payload: Json, path: string): TelnyxNumberOrder {
  const numbers = payload.phone_numbers;
  if (numbers !== undefined && !Array.isArray(numbers)) throw new MalformedWebhook(`${path}.phone_numbers must be an array`);
  return {
    id: optionalText(payload, 'id', { max: 255, path }),
    status: optionalText(payload, 'status', { max: 64, path }),
    customer_reference: optionalText(payload, 'customer_reference', { max: 255, path }),
    phone_numbers: (numbers ?? []).map((n: unknown, i: number) => {
      if (!isObject(n)) throw new MalformedWebhook(`${path}.phone_numbers[${i}] must be an object`);
      return { phone_number: text(n, 'phone_number', `${path}.phone_numbers[${i}]`), status: optionalText(n, 'status', { max: 64, path: `${path}.phone_numbers[${i}]` }) };
    }),
  };
}

/**
 * Telnyx number order words: `pending`, then `success` or `failure`, for the order and for each
 * number. The order has ended when its status is final or, without an order status (the
 * documented callback), when every number's is. A number is bought when its own status is
 * success (or, without one, the order's). The order's phone_numbers[].id names the order's line
 * (record_type number_order_phone_number), not the phone number: no carrier id comes from here.
 */
export function telnyxOutcome(order: TelnyxNumberOrder): TelnyxOrderOutcome {
  const ended = order.status !== undefined ? FINAL.has(order.status) : order.phone_numbers.length > 0 && order.phone_numbers.every((n) => n.status !== undefined && FINAL.has(n.status));
  if (!ended) return undefined;
  const numbers = order.phone_numbers.map((n) => {
    const bought = n.status === 'success' || (n.status === undefined && order.status === 'success');
    return { phoneNumber: n.phone_number, bought, ...(!bought && { error: `Telnyx number status ${n.status ?? order.status}` }) };
  });
  return { carrierOrderId: order.id, numbers };
}

/** An order as an API answer shows it: settled, or pending under its id (without an id it cannot be asked about: retry). */
function telnyxPlacement(order: TelnyxNumberOrder): OrderPlacement {
  const outcome = telnyxOutcome(order);
  if (outcome) return { outcome: 'settled', ...outcome };
  if (typeof order.id !== 'string') throw new CarrierUnavailableError('Telnyx answered a pending number order without an id');
  return { outcome: 'pending', carrierOrderId: order.id };
}

/** An order from an API answer's `data`, its shape checked loosely (an odd answer is a retry, not a crash). */
function orderFrom(data: unknown): TelnyxNumberOrder {
  if (!isObject(data)) throw new CarrierUnavailableError('Telnyx answered without a number order');
  try {
    return readNumberOrder(data, 'data');
  } catch (err) {
    throw new CarrierUnavailableError(`Telnyx answered an unreadable number order: ${(err as Error).message}`);
  }
}

/**
 * Telnyx API v2 numbers, each request as its operation in Telnyx's OpenAPI document declares it
 * (bearer auth; JSON body only on POST): ListAvailablePhoneNumbers, ListNumberOrders,
 * CreateNumberOrder, RetrieveNumberOrder, ListPhoneNumbers, DeletePhoneNumber.
 */
@Injectable()
export class TelnyxNumbers implements NumberProvider {
  readonly carrier = 'telnyx' as const;

  constructor(private readonly config: AppConfig) {}

  private call(path: string, init: RequestInit = {}): Promise<Response> {
    return callCarrier(`${this.config.telnyxApiUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${this.config.TELNYX_API_KEY}`, accept: 'application/json', ...(init.body ? { 'content-type': 'application/json' } : {}) },
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
    // `filter` is deepObject with explode (the document): the features array is its key repeated, no `[]`.
    for (const feature of query.features) params.append('filter[features]', feature);
    const body = await this.json(`/available_phone_numbers?${params}`);
    const data = (body.data as { phone_number?: string; features?: { name?: string }[]; region_information?: { region_name?: string }[] }[] | undefined) ?? [];
    return data.map((n) => ({
      phoneNumber: String(n.phone_number),
      features: (n.features ?? []).map((f) => f.name).filter((f): f is 'sms' | 'voice' => f === 'sms' || f === 'voice'),
      region: n.region_information?.[0]?.region_name ?? null,
    }));
  }

  /** The order placed as our order id (customer_reference), if any: a placement whose answer was lost. */
  private async placedAs(orderId: string): Promise<TelnyxNumberOrder | undefined> {
    const found = await this.json(`/number_orders?${new URLSearchParams({ 'filter[customer_reference]': orderId })}`);
    const [existing] = Array.isArray(found.data) ? found.data : [];
    return existing === undefined ? undefined : orderFrom(existing);
  }

  async order(orderId: string, _country: string, phoneNumbers: string[]): Promise<OrderPlacement> {
    // customer_reference is our order id: an order placed before a lost answer is found, not placed
    // again. No Idempotency-Key: CreateNumberOrder declares none, and Telnyx honours it only where declared.
    const existing = await this.placedAs(orderId);
    if (existing) return telnyxPlacement(existing);
    const response = await this.call('/number_orders', {
      method: 'POST',
      body: JSON.stringify({
        phone_numbers: phoneNumbers.map((phone_number) => ({ phone_number })),
        customer_reference: orderId,
        connection_id: this.config.TELNYX_CONNECTION_ID,
        messaging_profile_id: this.config.TELNYX_MESSAGING_PROFILE_ID,
      }),
    });
    const body = await readJson(response);
    if (response.ok) return telnyxPlacement(orderFrom(body.data));
    if (isRetryableStatus(response.status)) throw new CarrierUnavailableError(`Telnyx answered ${response.status}`);
    const [first] = (body.errors as { detail?: string; title?: string }[] | undefined) ?? [];
    const error = first?.detail ?? first?.title ?? `Telnyx answered ${response.status}`;
    return { outcome: 'settled', numbers: phoneNumbers.map((phoneNumber) => ({ phoneNumber, bought: false, error })) };
  }

  async orderStatus({ orderId, carrierOrderId }: { orderId: string; carrierOrderId?: string }): Promise<OrderPlacement> {
    if (carrierOrderId) return telnyxPlacement(orderFrom((await this.json(`/number_orders/${encodeURIComponent(carrierOrderId)}`)).data));
    const placed = await this.placedAs(orderId);
    if (!placed) throw new CarrierUnavailableError(`Telnyx shows no number order with customer_reference ${orderId} yet`);
    return telnyxPlacement(placed);
  }

  /**
   * ListPhoneNumbers by filter[phone_number] with the number's DIGITS: the document says
   * "Non-numerical characters will result in no values being returned" (so never `+1…`), and the
   * filter may match more than the one number: only an exact, held match counts.
   */
  async findHeld(phoneNumber: string): Promise<HeldNumber | undefined> {
    const [page] = await this.listPage(1, digitsOf(phoneNumber));
    return page.find((n) => n.phoneNumber === phoneNumber);
  }

  /** DeletePhoneNumber by its id; 404 for an id Telnyx gave us: deleted already (an earlier delete whose answer was lost). */
  async release(number: HeldNumber & { carrierNumberId: string }): Promise<void> {
    const response = await this.call(`/phone_numbers/${encodeURIComponent(number.carrierNumberId)}`, { method: 'DELETE' });
    if (response.status === 404) return;
    expectOk('Telnyx', response, await readJson(response));
  }

  async listHeld(): Promise<HeldNumber[]> {
    const held: HeldNumber[] = [];
    for (let page = 1, pages = 1; page <= pages; page++) {
      const [numbers, totalPages] = await this.listPage(page);
      held.push(...numbers);
      pages = Math.min(totalPages, 1000);
    }
    return held;
  }

  /** One page of ListPhoneNumbers (numbers our account holds) and the page count its `meta` gives. */
  private async listPage(page: number, digits?: string): Promise<[HeldNumber[], number]> {
    const params = new URLSearchParams({ 'page[number]': String(page), 'page[size]': '250' });
    if (digits) params.set('filter[phone_number]', digits);
    const body = await this.json(`/phone_numbers?${params}`);
    const data = (body.data as { id?: string; phone_number?: string; status?: string; country_iso_alpha2?: string }[] | undefined) ?? [];
    const meta = isObject(body.meta) && typeof body.meta.total_pages === 'number' ? body.meta.total_pages : 1;
    const numbers = data
      .filter((n) => typeof n.id === 'string' && typeof n.phone_number === 'string' && !NOT_HELD.has(String(n.status)))
      .map((n) => ({ phoneNumber: n.phone_number!, carrierNumberId: n.id, country: n.country_iso_alpha2 }));
    return [numbers, meta];
  }
}
