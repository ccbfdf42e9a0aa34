import { randomUUID } from 'node:crypto';
import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, parseJsonObject, sendJson } from '../sandbox-http.js';
import { telnyxErrors, telnyxWebhook } from '../telnyx/telnyx-sandbox.js';
import type { SandboxNumbers } from './sandbox-numbers.js';

interface TelnyxOrder {
  id: string;
  status: 'pending' | 'success' | 'failure';
  customer_reference: string | null;
  phone_numbers: { phone_number: string; status: string }[];
  /** The order reads pending until then; its number_order.complete is sent then. */
  completesAt: number;
}

const orders = new WeakMap<SandboxNumbers, Map<string, TelnyxOrder>>();
const ordersOf = (numbers: SandboxNumbers) => orders.get(numbers) ?? orders.set(numbers, new Map()).get(numbers)!;

/** An order as Telnyx shows it now: pending until its completion time. */
function shown(order: TelnyxOrder) {
  const pending = Date.now() < order.completesAt;
  return {
    record_type: 'number_order',
    id: order.id,
    status: pending ? 'pending' : order.status,
    customer_reference: order.customer_reference,
    phone_numbers: order.phone_numbers.map((n) => ({ ...n, status: pending ? 'pending' : n.status })),
    phone_numbers_count: order.phone_numbers.length,
  };
}

/** Whether `path` is one of the Telnyx numbers routes. */
export function isTelnyxNumbersPath(path: string): boolean {
  return path === '/v2/available_phone_numbers' || path.startsWith('/v2/number_orders') || path.startsWith('/v2/phone_numbers');
}

/**
 * Telnyx numbers: GET /v2/available_phone_numbers, POST|GET /v2/number_orders (asynchronous:
 * pending, then number_order.complete signed like every Telnyx webhook), GET /v2/number_orders/:id,
 * GET /v2/phone_numbers, DELETE /v2/phone_numbers/:id.
 */
export function telnyxNumbersRoute(ctx: SandboxContext, { req, res, body, chaos }: SandboxRequest, path: string, query: URLSearchParams): void {
  const numbers = ctx.numbers;
  if (header(req, 'authorization') !== `Bearer ${ctx.config.TELNYX_API_KEY}`) return sendJson(res, 401, telnyxErrors('10009', 'Authentication failed', 'Wrong API key'));
  const method = req.method;
  if (method === 'GET' && path === '/v2/available_phone_numbers') {
    const offered = numbers.offer(Number(query.get('filter[limit]') ?? 10), query.get('filter[national_destination_code]') ?? undefined, query.get('filter[phone_number][contains]') ?? undefined);
    return sendJson(res, 200, {
      data: offered.map((phone_number) => ({
        record_type: 'available_phone_number',
        phone_number,
        features: [{ name: 'sms' }, { name: 'voice' }],
        region_information: [{ region_type: 'state', region_name: 'IL' }],
        cost_information: { monthly_cost: '1.00', upfront_cost: '1.00', currency: 'USD' },
      })),
      meta: { total_results: offered.length },
    });
  }
  if (method === 'GET' && path === '/v2/number_orders') {
    const ref = query.get('filter[customer_reference]');
    return sendJson(res, 200, { data: [...ordersOf(numbers).values()].filter((o) => !ref || o.customer_reference === ref).map(shown) });
  }
  if (method === 'POST' && path === '/v2/number_orders') {
    const json = parseJsonObject(body);
    const list = Array.isArray(json?.phone_numbers) ? (json.phone_numbers as { phone_number?: unknown }[]) : [];
    if (list.length === 0 || list.some((n) => typeof n?.phone_number !== 'string')) return sendJson(res, 422, telnyxErrors('10015', 'Invalid parameter', 'phone_numbers must list phone_number objects', '/phone_numbers'));
    const config = { connection_id: String(json?.connection_id ?? ''), messaging_profile_id: String(json?.messaging_profile_id ?? '') };
    const order: TelnyxOrder = {
      id: randomUUID(),
      status: 'failure',
      customer_reference: typeof json?.customer_reference === 'string' ? json.customer_reference : null,
      phone_numbers: list.map((n) => ({ phone_number: n.phone_number as string, status: numbers.buy('telnyx', n.phone_number as string, config) ? 'success' : 'failure' })),
      completesAt: Date.now() + numbers.telnyxOrderDelayMs,
    };
    if (order.phone_numbers.some((n) => n.status === 'success')) order.status = 'success';
    ordersOf(numbers).set(order.id, order);
    const complete = { ...shown({ ...order, completesAt: 0 }) };
    void ctx.engine.runSeries(chaos, [telnyxWebhook('number_order.complete', `${ctx.config.publicBaseUrl}/webhooks/telnyx`, numbers.telnyxOrderDelayMs, ctx.telnyxPrivateKey, complete)]);
    if (numbers.loseAnswer()) return void res.socket?.destroy();
    return sendJson(res, 200, { data: shown(order) });
  }
  const orderId = /^\/v2\/number_orders\/([^/]+)$/.exec(path)?.[1];
  if (method === 'GET' && orderId) {
    const order = ordersOf(numbers).get(decodeURIComponent(orderId));
    return order ? sendJson(res, 200, { data: shown(order) }) : sendJson(res, 404, telnyxErrors('10005', 'Resource not found', 'no such number order'));
  }
  if (method === 'GET' && path === '/v2/phone_numbers') {
    const held = numbers.heldBy('telnyx', query.get('filter[phone_number]'));
    return sendJson(res, 200, { data: held.map(([phone_number, h]) => ({ record_type: 'phone_number', id: h.id, phone_number, status: 'active', ...h.config })) });
  }
  const numberId = /^\/v2\/phone_numbers\/([^/]+)$/.exec(path)?.[1];
  if (method === 'DELETE' && numberId) {
    const id = decodeURIComponent(numberId);
    return numbers.release('telnyx', id) ? sendJson(res, 200, { data: { record_type: 'phone_number', id, status: 'deleted' } }) : sendJson(res, 404, telnyxErrors('10005', 'Resource not found', 'no such phone number'));
  }
  sendJson(res, 404, telnyxErrors('10005', 'Resource not found', `no sandbox route ${method} ${path}`));
}
