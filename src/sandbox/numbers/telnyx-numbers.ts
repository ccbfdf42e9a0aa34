import { randomUUID } from 'node:crypto';
import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, parseJsonObject, sendJson } from '../sandbox-http.js';
import { telnyxErrors, telnyxWebhook } from '../telnyx/telnyx-sandbox.js';
import type { SandboxNumbers } from './sandbox-numbers.js';

/** One number of an order (schema PhoneNumber, record_type number_order_phone_number): its id names the order line. */
interface OrderLine {
  id: string;
  phone_number: string;
  status: string;
}

interface TelnyxOrder {
  id: string;
  status: 'pending' | 'success' | 'failure';
  customer_reference?: string;
  connection_id: string;
  messaging_profile_id: string;
  created_at: string;
  phone_numbers: OrderLine[];
  /** The order reads pending until then; its number_order.complete is sent then. */
  completesAt: number;
}

const orders = new WeakMap<SandboxNumbers, Map<string, TelnyxOrder>>();
const ordersOf = (numbers: SandboxNumbers) => orders.get(numbers) ?? orders.set(numbers, new Map()).get(numbers)!;

/** The order's lines as Telnyx shows them now: pending until the order's completion time. */
function lines(order: TelnyxOrder, pending: boolean) {
  return order.phone_numbers.map((n) => ({ id: n.id, record_type: 'number_order_phone_number', phone_number: n.phone_number, status: pending ? 'pending' : n.status, requirements_met: true, regulatory_requirements: [] }));
}

/** An order as the API shows it now (NumberOrderWithPhoneNumbers): pending until its completion time. */
function shown(order: TelnyxOrder) {
  const pending = Date.now() < order.completesAt;
  return {
    record_type: 'number_order',
    id: order.id,
    status: pending ? 'pending' : order.status,
    ...(order.customer_reference !== undefined && { customer_reference: order.customer_reference }),
    connection_id: order.connection_id,
    messaging_profile_id: order.messaging_profile_id,
    phone_numbers: lines(order, pending),
    phone_numbers_count: order.phone_numbers.length,
    requirements_met: true,
    sub_number_orders_ids: [],
    created_at: order.created_at,
    updated_at: new Date(pending ? Date.parse(order.created_at) : Math.max(order.completesAt, Date.parse(order.created_at))).toISOString(),
  };
}

/**
 * The number_order.complete payload as Telnyx's document gives its example (webhook
 * numberOrderStatusUpdate): customer_reference, the configuration and each line with its
 * status; no order id, no order status, no record_type.
 */
function completion(order: TelnyxOrder) {
  return {
    connection_id: order.connection_id,
    messaging_profile_id: order.messaging_profile_id,
    phone_numbers: lines(order, false),
    sub_number_orders_ids: [],
    ...(order.customer_reference !== undefined && { customer_reference: order.customer_reference }),
  };
}

/** A phone number resource (PhoneNumberDetailed, or PhoneNumberDeletedDetailed) with the schema's required fields. */
function phoneNumberResource(phone_number: string, held: { id: string; config: Record<string, string> }, status: 'active' | 'deleted') {
  const at = new Date(0).toISOString();
  return {
    record_type: 'phone_number',
    id: held.id,
    phone_number,
    status,
    country_iso_alpha2: 'US',
    phone_number_type: 'local',
    tags: [],
    external_pin: '',
    deletion_lock_enabled: false,
    created_at: at,
    purchased_at: at,
    ...held.config,
  };
}

/** Whether `path` is one of the Telnyx numbers routes. */
export function isTelnyxNumbersPath(path: string): boolean {
  return path === '/v2/available_phone_numbers' || path.startsWith('/v2/number_orders') || path.startsWith('/v2/phone_numbers');
}

/**
 * Telnyx numbers, answering in the shapes Telnyx's OpenAPI document gives: GET
 * /v2/available_phone_numbers, POST|GET /v2/number_orders (asynchronous: pending, then
 * number_order.complete in the document's example shape, signed like every Telnyx webhook), GET
 * /v2/number_orders/:id, GET /v2/phone_numbers (filter[phone_number] as documented: digits only,
 * a `+` finds nothing; `meta`), DELETE /v2/phone_numbers/:id (by the number's IntId).
 */
export function telnyxNumbersRoute(ctx: SandboxContext, { req, res, body, chaos }: SandboxRequest, path: string, query: URLSearchParams): void {
  const numbers = ctx.numbers;
  if (header(req, 'authorization') !== `Bearer ${ctx.config.TELNYX_API_KEY}`) return sendJson(res, 401, telnyxErrors('10009', 'Authentication failed', 'Wrong API key'));
  const method = req.method;
  if (method === 'GET' && path === '/v2/available_phone_numbers') {
    const contains = query.get('filter[phone_number][contains]');
    const ndc = query.get('filter[national_destination_code]') ?? undefined;
    // contains "excludes NDC if used with national_destination_code": then it looks past the area code.
    const offered = numbers.offer(Number(query.get('filter[limit]') ?? 10), ndc, (digits) => !contains || (ndc ? digits.slice(1 + ndc.length) : digits).includes(contains));
    return sendJson(res, 200, {
      data: offered.map((phone_number) => ({
        record_type: 'available_phone_number',
        phone_number,
        best_effort: false,
        reservable: true,
        quickship: true,
        vanity_format: '',
        features: [{ name: 'sms' }, { name: 'voice' }],
        region_information: [{ region_type: 'state', region_name: 'IL' }],
        cost_information: { monthly_cost: '1.00', upfront_cost: '1.00', currency: 'USD' },
      })),
      meta: { total_results: offered.length, best_effort_results: 0 },
    });
  }
  if (method === 'GET' && path === '/v2/number_orders') {
    const ref = query.get('filter[customer_reference]');
    const found = [...ordersOf(numbers).values()].filter((o) => !ref || o.customer_reference === ref);
    return sendJson(res, 200, { data: found.map(shown), meta: { page_number: 1, page_size: Math.max(20, found.length), total_pages: 1, total_results: found.length } });
  }
  if (method === 'POST' && path === '/v2/number_orders') {
    const json = parseJsonObject(body);
    const list = Array.isArray(json?.phone_numbers) ? (json.phone_numbers as { phone_number?: unknown }[]) : [];
    if (list.length === 0 || list.some((n) => typeof n?.phone_number !== 'string')) return sendJson(res, 422, telnyxErrors('10015', 'Invalid parameter', 'phone_numbers must list phone_number objects', '/phone_numbers'));
    const config = { connection_id: String(json?.connection_id ?? ''), messaging_profile_id: String(json?.messaging_profile_id ?? '') };
    const order: TelnyxOrder = {
      id: randomUUID(),
      status: 'failure',
      ...(typeof json?.customer_reference === 'string' && { customer_reference: json.customer_reference }),
      ...config,
      created_at: new Date().toISOString(),
      phone_numbers: list.map((n) => ({ id: randomUUID(), phone_number: n.phone_number as string, status: numbers.buy('telnyx', n.phone_number as string, config) ? 'success' : 'failure' })),
      completesAt: Date.now() + numbers.telnyxOrderDelayMs,
    };
    if (order.phone_numbers.some((n) => n.status === 'success')) order.status = 'success';
    ordersOf(numbers).set(order.id, order);
    void ctx.engine.runSeries(chaos, [telnyxWebhook('number_order.complete', `${ctx.config.publicBaseUrl}/webhooks/telnyx`, numbers.telnyxOrderDelayMs, ctx.telnyxPrivateKey, completion(order))]);
    if (numbers.loseAnswer()) return void res.socket?.destroy();
    return sendJson(res, 200, { data: shown(order) });
  }
  const orderId = /^\/v2\/number_orders\/([^/]+)$/.exec(path)?.[1];
  if (method === 'GET' && orderId) {
    const order = ordersOf(numbers).get(decodeURIComponent(orderId));
    return order ? sendJson(res, 200, { data: shown(order) }) : sendJson(res, 404, telnyxErrors('10005', 'Resource not found', 'no such number order'));
  }
  if (method === 'GET' && path === '/v2/phone_numbers') {
    // filter[phone_number]: "Requires at least three digits. Non-numerical characters will result in no values being returned."
    const filter = query.get('filter[phone_number]');
    const held = numbers.heldBy('telnyx', (n) => filter === null || (/^\d{3,}$/.test(filter) && n.slice(1).includes(filter)));
    const size = Math.min(250, Math.max(1, Number(query.get('page[size]') ?? 20) || 20));
    const page = Math.max(1, Number(query.get('page[number]') ?? 1) || 1);
    return sendJson(res, 200, {
      data: held.slice((page - 1) * size, page * size).map(([phone_number, h]) => phoneNumberResource(phone_number, h, 'active')),
      meta: { page_number: page, page_size: size, total_pages: Math.max(1, Math.ceil(held.length / size)), total_results: held.length },
    });
  }
  const numberId = /^\/v2\/phone_numbers\/([^/]+)$/.exec(path)?.[1];
  if (method === 'DELETE' && numberId) {
    const id = decodeURIComponent(numberId);
    const found = numbers.heldBy('telnyx').find(([, h]) => h.id === id);
    if (!found || !numbers.release('telnyx', id)) return sendJson(res, 404, telnyxErrors('10005', 'Resource not found', 'no such phone number'));
    return sendJson(res, 200, { data: phoneNumberResource(found[0], found[1], 'deleted') });
  }
  sendJson(res, 404, telnyxErrors('10005', 'Resource not found', `no sandbox route ${method} ${path}`));
}
