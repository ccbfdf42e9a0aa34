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

/** One number of a Telnyx order, as NumberOrderWithPhoneNumbers' items (schema PhoneNumber) show it. */
interface TelnyxOrderLine {
  id: string;
  record_type: 'number_order_phone_number';
  phone_number: string;
  status: 'pending' | 'success' | 'failure';
  requirements_met: boolean;
  regulatory_requirements: unknown[];
}

interface TelnyxOrder {
  id: string;
  status: 'pending' | 'success' | 'failure';
  customer_reference?: string;
  connection_id: string;
  messaging_profile_id: string;
  created_at: string;
  phone_numbers: TelnyxOrderLine[];
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** Telnyx phone number ids are integers as strings (IntId, example "1293384261075731499"), unlike its order ids (uuid). */
let nextTelnyxId = 1293384261075731499n;

/**
 * A real local HTTP server standing in for the numbers APIs of Telnyx (/v2), Twilio (/twilio)
 * and Vonage (/), written from their published documents (the carrier-specs): it answers in the
 * documented shapes and filters as documented, not as our client would like:
 *
 * - Telnyx ListPhoneNumbers `filter[phone_number]`: "Requires at least three digits.
 *   Non-numerical characters will result in no values being returned" (so `+1312…` finds
 *   nothing); the digits match anywhere in the number. Phone number ids are IntIds; a number
 *   order's phone_numbers[].id names the order line (a uuid), never the phone number.
 *   number_order.complete (completeTelnyxOrder) carries what the document's example carries:
 *   customer_reference and the lines, no order id or status.
 * - Vonage search_pattern: 0 starts with (E.164 digits, calling code included; the default),
 *   1 contains, 2 ends with; `features` one of the published enum's values.
 * - Authentication as each documents it (Vonage: basic header or api_key/api_secret query).
 *
 * It offers `offered` numbers, sells each once to our carrier account, and counts a purchase of
 * a number the account already holds as `boughtTwice` (which must stay 0); `released` lists the
 * numbers it deleted, in order. `loseNextPurchaseAnswers(n)`: the next n purchases happen but
 * their answers are lost (the connection is cut); `answerUnavailable(n)`: the next n requests get
 * a 503. Telnyx orders complete at once, or with
 * `telnyxAsync` stay pending until `completeTelnyxOrder`.
 */
export class FakeNumberCarrier extends LocalCarrierServer {
  readonly requests: NumberRequest[] = [];
  readonly held = new Map<string, { carrier: Carrier; id: string; config: Record<string, string> }>();
  readonly telnyxOrders = new Map<string, TelnyxOrder>();
  /** Numbers released at the carrier, one entry per release that happened. */
  readonly released: string[] = [];
  boughtTwice = 0;
  purchases = 0;
  telnyxAsync = false;
  /** Numbers any purchase of is refused (sold to someone else). */
  readonly unavailable = new Set<string>();
  private loseAnswers = 0;
  private outage = 0;

  constructor(readonly offered: string[] = ['+13125550101', '+13125550102', '+13125550199', '+14155550101']) {
    super();
  }

  loseNextPurchaseAnswers(n: number): void {
    this.loseAnswers += n;
  }

  /** The next n requests (of any operation) are answered 503, as during a carrier outage: nothing happens. */
  answerUnavailable(n: number): void {
    this.outage += n;
  }

  /** A number our carrier account already holds (bought before, outside the app); returns its carrier id. */
  hold(carrier: Carrier, phoneNumber: string): string {
    this.held.set(phoneNumber, { carrier, id: this.newId(carrier, phoneNumber), config: {} });
    return this.held.get(phoneNumber)!.id;
  }

  async start(): Promise<this> {
    await this.listen((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const request = { method: req.method ?? 'GET', path: req.url ?? '', headers: req.headers, body };
        this.requests.push(request);
        try {
          if (this.outage > 0) {
            this.outage--;
            return json(res, 503, { errors: [{ code: '10011', title: 'Service unavailable' }] });
          }
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

  /**
   * Settles a pending Telnyx order; returns the payload of its number_order.complete callback as
   * the document's example (webhook numberOrderStatusUpdate) has it: no order id, no order status.
   */
  completeTelnyxOrder(id: string, status: 'success' | 'failure'): Record<string, unknown> {
    const order = this.telnyxOrders.get(id)!;
    if (order.status === 'pending') {
      order.status = status;
      for (const n of order.phone_numbers) {
        n.status = status;
        if (status === 'success') this.buy('telnyx', n.phone_number, { connection_id: order.connection_id, messaging_profile_id: order.messaging_profile_id });
      }
    }
    return {
      connection_id: order.connection_id,
      messaging_profile_id: order.messaging_profile_id,
      phone_numbers: structuredClone(order.phone_numbers),
      sub_number_orders_ids: [randomUUID()],
      customer_reference: order.customer_reference,
    };
  }

  private newId(carrier: Carrier, phoneNumber: string): string {
    if (carrier === 'twilio') return `PN${randomUUID().replace(/-/g, '')}`;
    if (carrier === 'vonage') return phoneNumber.slice(1);
    return String(nextTelnyxId++);
  }

  private buy(carrier: Carrier, phoneNumber: string, config: Record<string, string>): boolean {
    this.purchases++;
    if (this.held.has(phoneNumber)) {
      this.boughtTwice++;
      return false;
    }
    if (this.unavailable.has(phoneNumber)) return false;
    this.held.set(phoneNumber, { carrier, id: this.newId(carrier, phoneNumber), config });
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

  private heldBy(carrier: Carrier, match: (phoneNumber: string) => boolean = () => true) {
    return [...this.held.entries()].filter(([n, h]) => h.carrier === carrier && match(n));
  }

  private authorized(r: NumberRequest, q: URLSearchParams, carrier: Carrier): boolean {
    const auth = r.headers.authorization ?? '';
    if (carrier === 'telnyx') return /^Bearer \S+$/.test(auth);
    const basic = /^Basic (\S+)$/.exec(auth) && Buffer.from(auth.slice(6), 'base64').toString().includes(':');
    return carrier === 'twilio' ? Boolean(basic) : Boolean(basic) || (q.has('api_key') && q.has('api_secret'));
  }

  private route(r: NumberRequest, res: http.ServerResponse): void {
    const url = new URL(r.path, this.url);
    const q = url.searchParams;
    const path = url.pathname;
    const carrier: Carrier = path.startsWith('/v2/') ? 'telnyx' : path.startsWith('/twilio/') ? 'twilio' : 'vonage';
    if (!this.authorized(r, q, carrier)) return json(res, 401, { errors: [{ code: '10009', title: 'Authentication failed' }] });
    if (carrier === 'telnyx') return this.telnyx(r, res, path, q);
    if (carrier === 'twilio') return this.twilio(r, res, path, q);
    return this.vonage(r, res, path, q);
  }

  private offer(match: (digits: string) => boolean): string[] {
    return this.offered.filter((n) => !this.held.has(n) && match(n.slice(1)));
  }

  private telnyx(r: NumberRequest, res: http.ServerResponse, path: string, q: URLSearchParams): void {
    if (path === '/v2/available_phone_numbers' && r.method === 'GET') {
      const ndc = q.get('filter[national_destination_code]');
      const contains = q.get('filter[phone_number][contains]');
      const numbers = this.offer((d) => (!ndc || d.startsWith(`1${ndc}`)) && (!contains || d.includes(contains))).slice(0, Number(q.get('filter[limit]') ?? 10));
      return json(res, 200, {
        data: numbers.map((phone_number) => ({
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
        meta: { total_results: numbers.length, best_effort_results: 0 },
      });
    }
    if (path === '/v2/number_orders' && r.method === 'GET') {
      const ref = q.get('filter[customer_reference]');
      const orders = [...this.telnyxOrders.values()].filter((o) => !ref || o.customer_reference === ref);
      return json(res, 200, { data: orders.map((o) => this.telnyxOrderShown(o)), meta: { page_number: 1, page_size: 20, total_pages: 1, total_results: orders.length } });
    }
    if (path === '/v2/number_orders' && r.method === 'POST') {
      const body = JSON.parse(r.body) as { phone_numbers: { phone_number: string }[]; customer_reference?: string; connection_id?: string; messaging_profile_id?: string };
      const order: TelnyxOrder = {
        id: randomUUID(),
        status: 'pending',
        customer_reference: body.customer_reference,
        connection_id: body.connection_id ?? '',
        messaging_profile_id: body.messaging_profile_id ?? '',
        created_at: new Date().toISOString(),
        phone_numbers: body.phone_numbers.map((n) => ({ id: randomUUID(), record_type: 'number_order_phone_number', phone_number: n.phone_number, status: 'pending', requirements_met: true, regulatory_requirements: [] })),
      };
      this.telnyxOrders.set(order.id, order);
      if (!this.telnyxAsync) {
        for (const n of order.phone_numbers) n.status = this.buy('telnyx', n.phone_number, { connection_id: order.connection_id, messaging_profile_id: order.messaging_profile_id }) ? 'success' : 'failure';
        order.status = order.phone_numbers.some((n) => n.status === 'success') ? 'success' : 'failure';
      }
      return this.answerPurchase(res, 200, { data: this.telnyxOrderShown(order) });
    }
    const orderMatch = /^\/v2\/number_orders\/([^/]+)$/.exec(path);
    if (orderMatch && r.method === 'GET') {
      const order = this.telnyxOrders.get(decodeURIComponent(orderMatch[1]));
      return order ? json(res, 200, { data: this.telnyxOrderShown(order) }) : json(res, 404, { errors: [{ code: '10005', title: 'Resource not found' }] });
    }
    if (path === '/v2/phone_numbers' && r.method === 'GET') {
      const filter = q.get('filter[phone_number]');
      // The document: at least three digits; any non-numerical character → no values.
      const matches = (n: string) => filter === null || (/^\d{3,}$/.test(filter) && n.slice(1).includes(filter));
      const numbers = this.heldBy('telnyx', matches);
      const size = Number(q.get('page[size]') ?? 20);
      const page = Number(q.get('page[number]') ?? 1);
      return json(res, 200, {
        data: numbers.slice((page - 1) * size, page * size).map(([phone_number, h]) => this.telnyxNumber(phone_number, h, 'active')),
        meta: { page_number: page, page_size: size, total_pages: Math.max(1, Math.ceil(numbers.length / size)), total_results: numbers.length },
      });
    }
    const numberMatch = /^\/v2\/phone_numbers\/([^/]+)$/.exec(path);
    if (numberMatch && r.method === 'DELETE') {
      const found = this.heldBy('telnyx').find(([, h]) => h.id === decodeURIComponent(numberMatch[1]));
      if (!found) return json(res, 404, { errors: [{ code: '10005', title: 'Resource not found' }] });
      this.held.delete(found[0]);
      this.released.push(found[0]);
      return json(res, 200, { data: this.telnyxNumber(found[0], found[1], 'deleted') });
    }
    json(res, 404, { errors: [{ code: '10005', title: `no route ${r.method} ${path}` }] });
  }

  /** NumberOrderWithPhoneNumbers. */
  private telnyxOrderShown(o: TelnyxOrder) {
    return { record_type: 'number_order', ...structuredClone(o), phone_numbers_count: o.phone_numbers.length, requirements_met: true, sub_number_orders_ids: [], updated_at: new Date().toISOString() };
  }

  /** PhoneNumberDetailed with its required fields. */
  private telnyxNumber(phone_number: string, h: { id: string; config: Record<string, string> }, status: string) {
    const at = '2026-01-01T00:00:00Z';
    return { id: h.id, record_type: 'phone_number', phone_number, status, country_iso_alpha2: 'US', tags: [], external_pin: '', created_at: at, purchased_at: at, phone_number_type: 'local', deletion_lock_enabled: false, ...h.config };
  }

  private twilio(r: NumberRequest, res: http.ServerResponse, path: string, q: URLSearchParams): void {
    const account = /^\/twilio\/2010-04-01\/Accounts\/([^/]+)/.exec(path)?.[1] ?? '';
    const base = `/2010-04-01/Accounts/${account}`;
    const resource = (phone_number: string, h: { id: string; config: Record<string, string> }) => ({
      account_sid: account,
      sid: h.id,
      phone_number,
      friendly_name: h.config.FriendlyName ?? phone_number,
      capabilities: { voice: true, sms: true, mms: false, fax: false },
      sms_url: h.config.SmsUrl ?? '',
      voice_url: h.config.VoiceUrl ?? null,
      status_callback: h.config.StatusCallback ?? '',
      status: 'in-use',
      uri: `${base}/IncomingPhoneNumbers/${h.id}.json`,
    });
    if (/\/AvailablePhoneNumbers\/[A-Z]{2}\/Local\.json$/.test(path) && r.method === 'GET') {
      const area = q.get('AreaCode');
      const contains = q.get('Contains');
      const numbers = this.offer((d) => (!area || d.startsWith(`1${area}`)) && (!contains || d.includes(contains))).slice(0, Number(q.get('PageSize') ?? 50));
      return json(res, 200, {
        available_phone_numbers: numbers.map((phone_number) => ({ friendly_name: phone_number, phone_number, region: 'IL', iso_country: 'US', address_requirements: 'none', beta: false, capabilities: { voice: true, sms: true, mms: false } })),
        uri: path.replace('/twilio', ''),
      });
    }
    if (path.endsWith('/IncomingPhoneNumbers.json') && r.method === 'GET') {
      const wanted = q.get('PhoneNumber');
      const numbers = this.heldBy('twilio', (n) => !wanted || n === wanted);
      const uri = `${base}/IncomingPhoneNumbers.json`;
      return json(res, 200, { incoming_phone_numbers: numbers.map(([n, h]) => resource(n, h)), start: 0, end: Math.max(0, numbers.length - 1), page: 0, page_size: Number(q.get('PageSize') ?? 50), first_page_uri: uri, next_page_uri: null, previous_page_uri: null, uri });
    }
    if (path.endsWith('/IncomingPhoneNumbers.json') && r.method === 'POST') {
      const form = new URLSearchParams(r.body);
      const phoneNumber = form.get('PhoneNumber') ?? '';
      const config = Object.fromEntries(['SmsUrl', 'VoiceUrl', 'StatusCallback'].map((k) => [k, form.get(k) ?? '']));
      if (!this.buy('twilio', phoneNumber, config)) return this.answerPurchase(res, 400, { code: 21422, message: 'PhoneNumber requested is not available', more_info: 'https://www.twilio.com/docs/errors/21422', status: 400 });
      return this.answerPurchase(res, 201, resource(phoneNumber, this.held.get(phoneNumber)!));
    }
    const sid = /\/IncomingPhoneNumbers\/([^/]+)\.json$/.exec(path)?.[1];
    if (sid && r.method === 'DELETE') {
      const found = this.heldBy('twilio').find(([, h]) => h.id === decodeURIComponent(sid));
      if (!found) return json(res, 404, { code: 20404, message: 'The requested resource was not found', status: 404 });
      this.held.delete(found[0]);
      this.released.push(found[0]);
      res.writeHead(204);
      return void res.end();
    }
    json(res, 404, { code: 20404, message: `no route ${r.method} ${path}`, status: 404 });
  }

  private vonage(r: NumberRequest, res: http.ServerResponse, path: string, q: URLSearchParams): void {
    const form = new URLSearchParams(r.body);
    const pattern = q.get('pattern');
    const strategy = q.get('search_pattern') ?? '0';
    const matches = (digits: string) => !pattern || (strategy === '0' ? digits.startsWith(pattern) : strategy === '1' ? digits.includes(pattern) : digits.endsWith(pattern));
    const answer = (status: number, code: string, label: string) => json(res, status, { 'error-code': code, 'error-code-label': label });
    if (path === '/number/search' && r.method === 'GET') {
      const features = q.get('features');
      if (features !== null && !['SMS', 'VOICE', 'SMS,VOICE', 'MMS', 'SMS,MMS', 'VOICE,MMS', 'SMS,MMS,VOICE'].includes(features)) return answer(400, '400', 'features must be one of the published values');
      const numbers = this.offer(matches).slice(0, Number(q.get('size') ?? 10));
      return json(res, 200, { count: numbers.length, numbers: numbers.map((n) => ({ country: q.get('country') ?? 'US', msisdn: n.slice(1), type: 'mobile-lvn', cost: '0.90', features: ['VOICE', 'SMS'] })) });
    }
    if (path === '/account/numbers' && r.method === 'GET') {
      const numbers = this.heldBy('vonage', (n) => matches(n.slice(1)));
      return json(res, 200, { count: numbers.length, numbers: numbers.map(([n, h]) => ({ country: 'US', msisdn: n.slice(1), type: 'mobile-lvn', features: ['VOICE', 'SMS'], ...(h.config.app_id && { app_id: h.config.app_id }) })) });
    }
    if (r.method !== 'POST') return answer(404, '404', `no route ${r.method} ${path}`);
    const phoneNumber = `+${form.get('msisdn')}`;
    if (!form.get('country')) return answer(400, '400', 'country is required');
    if (path === '/number/buy') {
      if (!this.buy('vonage', phoneNumber, {})) return this.answerPurchase(res, 420, { 'error-code': '420', 'error-code-label': 'method failed' });
      return this.answerPurchase(res, 200, { 'error-code': '200', 'error-code-label': 'success' });
    }
    const held = this.held.get(phoneNumber);
    if (path === '/number/update') {
      if (!held || held.carrier !== 'vonage') return answer(420, '420', 'method failed');
      held.config.app_id = form.get('app_id') ?? '';
      return answer(200, '200', 'success');
    }
    if (path === '/number/cancel') {
      if (!held || held.carrier !== 'vonage') return answer(420, '420', 'method failed');
      this.held.delete(phoneNumber);
      this.released.push(phoneNumber);
      return answer(200, '200', 'success');
    }
    answer(404, '404', `no route ${r.method} ${path}`);
  }
}
