import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { LocalCarrierServer } from './local-carrier-server.js';

type Carrier = 'telnyx' | 'twilio' | 'vonage';

export interface NumberRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface TelnyxOrder {
  id: string;
  status: 'pending' | 'success' | 'failure';
  customer_reference?: string;
  phone_numbers: { phone_number: string; status: string }[];
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/**
 * A real local HTTP server standing in for the numbers APIs of Telnyx (/v2), Twilio (/twilio)
 * and Vonage (/). It offers `offered` numbers, sells each once to our carrier account, and
 * counts a purchase of a number the account already holds as `boughtTwice` (which must stay 0).
 * `loseNextPurchaseAnswers(n)`: the next n purchases happen but their answers are lost (the
 * connection is cut). Telnyx orders complete at once, or with `telnyxAsync` stay pending until
 * `completeTelnyxOrder` (what its number_order.complete webhook then reports).
 */
export class FakeNumberCarrier extends LocalCarrierServer {
  readonly requests: NumberRequest[] = [];
  readonly held = new Map<string, { carrier: Carrier; id: string; config: Record<string, string> }>();
  readonly telnyxOrders = new Map<string, TelnyxOrder>();
  boughtTwice = 0;
  purchases = 0;
  telnyxAsync = false;
  /** Numbers any purchase of is refused (sold to someone else). */
  readonly unavailable = new Set<string>();
  private loseAnswers = 0;

  constructor(readonly offered: string[] = ['+13125550101', '+13125550102', '+13125550199', '+14155550101']) {
    super();
  }

  loseNextPurchaseAnswers(n: number): void {
    this.loseAnswers += n;
  }

  async start(): Promise<this> {
    await this.listen((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const request = { method: req.method ?? 'GET', path: req.url ?? '', headers: req.headers, body };
        this.requests.push(request);
        try {
          this.route(request, res);
        } catch (err) {
          json(res, 500, { errors: [{ title: (err as Error).message }] });
        }
      });
    });
    return this;
  }

  /** Purchases (successful or not) of this number that reached the carrier. */
  purchasesOf(phoneNumber: string): NumberRequest[] {
    const digits = phoneNumber.replace('+', '');
    return this.requests.filter(
      (r) =>
        r.method === 'POST' &&
        ((r.path.endsWith('/IncomingPhoneNumbers.json') && new URLSearchParams(r.body).get('PhoneNumber') === phoneNumber) ||
          (r.path === '/number/buy' && new URLSearchParams(r.body).get('msisdn') === digits) ||
          (r.path === '/v2/number_orders' && r.body.includes(phoneNumber))),
    );
  }

  /** Settles a pending Telnyx order; returns it as the number_order.complete webhook carries it. */
  completeTelnyxOrder(id: string, status: 'success' | 'failure'): TelnyxOrder {
    const order = this.telnyxOrders.get(id)!;
    if (order.status === 'pending') {
      order.status = status;
      for (const n of order.phone_numbers) {
        n.status = status;
        if (status === 'success') this.buy('telnyx', n.phone_number, { customer_reference: order.customer_reference ?? '' });
      }
    }
    return structuredClone(order);
  }

  private buy(carrier: Carrier, phoneNumber: string, config: Record<string, string>): boolean {
    this.purchases++;
    if (this.held.has(phoneNumber)) {
      this.boughtTwice++;
      return false;
    }
    if (this.unavailable.has(phoneNumber)) return false;
    this.held.set(phoneNumber, { carrier, id: carrier === 'twilio' ? `PN${randomUUID().replace(/-/g, '')}` : randomUUID(), config });
    return true;
  }

  /** Answers a purchase, unless its answer is to be lost: then the connection is cut after the purchase happened. */
  private answerPurchase(res: http.ServerResponse, status: number, body: unknown): void {
    if (this.loseAnswers > 0) {
      this.loseAnswers--;
      res.socket?.destroy();
      return;
    }
    json(res, status, body);
  }

  private heldBy(carrier: Carrier, filter?: string | null) {
    return [...this.held.entries()].filter(([n, h]) => h.carrier === carrier && (!filter || n === filter || n.replace('+', '') === filter));
  }

  private route(r: NumberRequest, res: http.ServerResponse): void {
    const url = new URL(r.path, this.url);
    const q = url.searchParams;
    const form = new URLSearchParams(r.body);
    const path = url.pathname;
    const offered = (contains?: string | null, prefix?: string | null) =>
      this.offered.filter((n) => !this.held.has(n) && (!contains || n.includes(contains)) && (!prefix || n.startsWith(prefix)));
    // Telnyx
    if (path === '/v2/available_phone_numbers') {
      const ndc = q.get('filter[national_destination_code]');
      const numbers = offered(q.get('filter[phone_number][contains]'), ndc ? `+1${ndc}` : null).slice(0, Number(q.get('filter[limit]') ?? 10));
      return json(res, 200, {
        data: numbers.map((phone_number) => ({
          record_type: 'available_phone_number',
          phone_number,
          features: [{ name: 'sms' }, { name: 'voice' }],
          region_information: [{ region_type: 'state', region_name: 'IL' }],
          cost_information: { monthly_cost: '1.00', upfront_cost: '1.00', currency: 'USD' },
        })),
      });
    }
    if (path === '/v2/number_orders' && r.method === 'GET') {
      const ref = q.get('filter[customer_reference]');
      return json(res, 200, { data: [...this.telnyxOrders.values()].filter((o) => o.customer_reference === ref) });
    }
    if (path === '/v2/number_orders' && r.method === 'POST') {
      const body = JSON.parse(r.body) as { phone_numbers: { phone_number: string }[]; customer_reference?: string; connection_id?: string; messaging_profile_id?: string };
      const order: TelnyxOrder = { id: randomUUID(), status: 'pending', customer_reference: body.customer_reference, phone_numbers: body.phone_numbers.map((n) => ({ phone_number: n.phone_number, status: 'pending' })) };
      this.telnyxOrders.set(order.id, order);
      if (!this.telnyxAsync) {
        const config = { connection_id: body.connection_id ?? '', messaging_profile_id: body.messaging_profile_id ?? '' };
        for (const n of order.phone_numbers) n.status = this.buy('telnyx', n.phone_number, config) ? 'success' : 'failure';
        order.status = order.phone_numbers.some((n) => n.status === 'success') ? 'success' : 'failure';
      }
      return this.answerPurchase(res, 200, { data: { record_type: 'number_order', ...order } });
    }
    const orderMatch = /^\/v2\/number_orders\/([^/]+)$/.exec(path);
    if (orderMatch) {
      const order = this.telnyxOrders.get(decodeURIComponent(orderMatch[1]));
      return order ? json(res, 200, { data: order }) : json(res, 404, { errors: [{ title: 'not found' }] });
    }
    if (path === '/v2/phone_numbers' && r.method === 'GET') {
      return json(res, 200, { data: this.heldBy('telnyx', q.get('filter[phone_number]')).map(([phone_number, h]) => ({ id: h.id, phone_number })) });
    }
    const telnyxNumber = /^\/v2\/phone_numbers\/([^/]+)$/.exec(path);
    if (telnyxNumber && r.method === 'DELETE') return this.release('telnyx', decodeURIComponent(telnyxNumber[1]), res, 200);
    // Twilio
    if (/^\/twilio\/2010-04-01\/Accounts\/[^/]+\/AvailablePhoneNumbers\/[A-Z]{2}\/Local\.json$/.test(path)) {
      const area = q.get('AreaCode');
      const numbers = offered(q.get('Contains'), area ? `+1${area}` : null).slice(0, Number(q.get('PageSize') ?? 10));
      return json(res, 200, { available_phone_numbers: numbers.map((phone_number) => ({ phone_number, region: 'IL', capabilities: { voice: true, SMS: true, MMS: false } })) });
    }
    if (/\/IncomingPhoneNumbers\.json$/.test(path) && r.method === 'GET') {
      return json(res, 200, { incoming_phone_numbers: this.heldBy('twilio', q.get('PhoneNumber')).map(([phone_number, h]) => ({ sid: h.id, phone_number })) });
    }
    if (/\/IncomingPhoneNumbers\.json$/.test(path) && r.method === 'POST') {
      const phoneNumber = form.get('PhoneNumber') ?? '';
      const config = Object.fromEntries(['SmsUrl', 'VoiceUrl', 'StatusCallback'].map((k) => [k, form.get(k) ?? '']));
      if (!this.buy('twilio', phoneNumber, config)) return this.answerPurchase(res, 400, { code: 21422, message: 'PhoneNumber requested is not available', status: 400 });
      return this.answerPurchase(res, 201, { sid: this.held.get(phoneNumber)!.id, phone_number: phoneNumber });
    }
    const twilioNumber = /\/IncomingPhoneNumbers\/([^/]+)\.json$/.exec(path);
    if (twilioNumber && r.method === 'DELETE') return this.release('twilio', decodeURIComponent(twilioNumber[1]), res, 204);
    // Vonage
    if (path === '/number/search') {
      const pattern = q.get('pattern');
      const numbers = offered(pattern, null).slice(0, Number(q.get('size') ?? 10));
      return json(res, 200, { count: numbers.length, numbers: numbers.map((n) => ({ country: 'US', msisdn: n.replace('+', ''), type: 'mobile-lvn', cost: '0.90', features: ['VOICE', 'SMS'] })) });
    }
    if (path === '/account/numbers') {
      const numbers = this.heldBy('vonage', q.get('pattern'));
      return json(res, 200, { count: numbers.length, numbers: numbers.map(([n]) => ({ country: 'US', msisdn: n.replace('+', '') })) });
    }
    if (path === '/number/buy') {
      const phoneNumber = `+${form.get('msisdn')}`;
      if (!this.buy('vonage', phoneNumber, {})) return this.answerPurchase(res, 420, { 'error-code': '420', 'error-code-label': 'method failed' });
      return this.answerPurchase(res, 200, { 'error-code': '200', 'error-code-label': 'success' });
    }
    if (path === '/number/update') {
      const held = this.held.get(`+${form.get('msisdn')}`);
      if (!held) return json(res, 420, { 'error-code': '420', 'error-code-label': 'method failed' });
      held.config.app_id = form.get('app_id') ?? '';
      return json(res, 200, { 'error-code': '200', 'error-code-label': 'success' });
    }
    if (path === '/number/cancel') {
      const phoneNumber = `+${form.get('msisdn')}`;
      if (!this.held.has(phoneNumber)) return json(res, 420, { 'error-code': '420', 'error-code-label': 'method failed' });
      this.held.delete(phoneNumber);
      return json(res, 200, { 'error-code': '200', 'error-code-label': 'success' });
    }
    json(res, 404, { errors: [{ title: `no route ${r.method} ${path}` }] });
  }

  private release(carrier: Carrier, id: string, res: http.ServerResponse, ok: number): void {
    const found = this.heldBy(carrier).find(([, h]) => h.id === id);
    if (!found) return json(res, 404, { errors: [{ title: 'not found' }] });
    this.held.delete(found[0]);
    res.writeHead(ok, { 'content-type': 'application/json' });
    res.end(ok === 204 ? undefined : JSON.stringify({ data: { id, phone_number: found[0], status: 'deleted' } }));
  }
}
