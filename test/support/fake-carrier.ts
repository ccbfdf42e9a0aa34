import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { messageIdFromUrl } from '../../src/carriers/message-sender.js';
import { DEV_TWILIO_ACCOUNT_SID, DEV_TWILIO_AUTH_TOKEN, DEV_VONAGE_SIGNATURE_SECRET } from '../../src/telephony/dev-credentials.js';
import { formBody, telnyxReceipt, twilioHeaders, vonageHeaders, vonageToken, type TelnyxSigner } from './carrier-signing.js';
import { LocalCarrierServer } from './local-carrier-server.js';

export interface CarrierRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type ScriptedAnswer = { status: number; body?: unknown; delayMs?: number; headers?: Record<string, string> };

/** A send request the fake carrier keeps open until the test lets it be answered. */
export interface HeldRequest {
  /** Resolves once the request has arrived (and is being held). */
  arrived: Promise<CarrierRequest>;
  /** Answer it now (with the hold's answer, else as any other request). */
  release(): void;
}

interface Hold {
  answer?: ScriptedAnswer;
  arrive: (request: CarrierRequest) => void;
  released: Promise<void>;
}

type CarrierName = 'telnyx' | 'twilio' | 'vonage';

/**
 * What happens to the answer of a send the carrier took (its SMS is on the handset):
 * `reset` (the connection drops, no answer), `504` (a gateway's 504), `slow` (the answer comes
 * after `slowMs`, later than our timeout).
 */
export type LostAnswer = 'reset' | '504' | 'slow';

/** What a status webhook the test has the fake carrier send reports (sendReceipt). */
export type ReceiptOutcome = 'delivered' | 'opted_out';

/** One SMS the fake carrier took and put on the handset. */
export interface HandsetSms {
  carrier: CarrierName;
  carrierId: string;
  /** Our message id, read from the reference the send carried (Telnyx webhook_url, Twilio StatusCallback, Vonage client_ref). */
  ourMessageId: string | undefined;
  from: string;
  to: string;
  text: string;
  /** Where its status webhooks go: the send's webhook_url / StatusCallback (Vonage: the application's URL). */
  callbackUrl: string | undefined;
  at: Date;
}

/** Where the fake carrier's status webhooks go, and what signs them (the app's development credentials for Twilio and Vonage). */
export interface ReceiptTarget {
  appUrl: string;
  telnyx: TelnyxSigner;
}

/**
 * A real local HTTP server standing in for the Telnyx, Twilio and Vonage send APIs, behaving as
 * they document: no idempotency header is honoured (none is declared), so every send it takes is
 * a new message with a new id and one more SMS on the handset (`handset`). It accepts by default,
 * or answers from a script (a scripted answer other than 2xx is a send it did not take). It can
 * lose the answer of a send it took (`loseAnswers`), send the status webhook that carries our
 * reference (`sendReceipt`, or every send's with `autoReceipts`), and answer the lookups the
 * senders use (Telnyx GET /detail_records, Twilio GET Messages.json, Vonage GET /v2/reports/records)
 * from what it took, unless `lookupsShow` is false (a lookup that cannot see the message yet).
 */
export class FakeCarrier extends LocalCarrierServer {
  readonly requests: CarrierRequest[] = [];
  readonly handset: HandsetSms[] = [];
  /** Whether the lookups list what the carrier took. */
  lookupsShow = true;
  /** At most this many items on a lookup's page (the carriers page as they document: Telnyx meta, Twilio next_page_uri, Vonage TRUNCATED + _links.next); unset: the page size asked, Vonage's 1000. */
  lookupPageSize?: number;
  private readonly script: ScriptedAnswer[] = [];
  private readonly holds: Hold[] = [];
  private lost?: { kind: LostAnswer; remaining: number; slowMs: number };
  private receiptTarget?: ReceiptTarget;
  private autoReceiptMs?: number;
  private readonly receiptsSent: Promise<unknown>[] = [];

  /** The next sends get these answers, in order; then it accepts again. */
  answerNext(...answers: ScriptedAnswer[]): void {
    this.script.push(...answers);
  }

  /**
   * The next send request that arrives is held open (a carrier call still in flight) until
   * `release()`; then it gets `answer` if given, else the script's next answer or the default.
   * A held send the carrier takes is on the handset from its arrival.
   */
  holdNext(answer?: ScriptedAnswer): HeldRequest {
    let arrive!: (request: CarrierRequest) => void;
    let release!: () => void;
    const arrived = new Promise<CarrierRequest>((resolve) => (arrive = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holds.push({ answer, arrive, released });
    return { arrived, release };
  }

  /** The next `times` sends (Infinity: every one) are taken, and their answers lost as `kind` says. */
  loseAnswers(kind: LostAnswer, times = 1, slowMs = 0): void {
    this.lost = { kind, remaining: times, slowMs };
  }

  /** Status webhooks go to the app at `target` (sendReceipt), and after every send it takes, `delayMs` later, when `autoReceiptMs` is given. */
  receiptsTo(target: ReceiptTarget, autoReceiptMs?: number): void {
    this.receiptTarget = target;
    this.autoReceiptMs = autoReceiptMs;
  }

  /** The send requests of our message `messageId` (by the reference each carried). */
  sendsFor(messageId: string): CarrierRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && readSend(r)?.ourMessageId === messageId);
  }

  /** The SMS the handset got for our message `messageId`. */
  handsetFor(messageId: string): HandsetSms[] {
    return this.handset.filter((sms) => sms.ourMessageId === messageId);
  }

  /** The lookups that reached it. */
  get lookups(): CarrierRequest[] {
    return this.requests.filter((r) => r.method === 'GET');
  }

  /**
   * Posts the status webhook of every SMS of `messageId` on the handset; their HTTP statuses.
   * `delivered` (Telnyx, Twilio and Vonage `delivered`), or `opted_out`: failed because the
   * handset texted STOP to the carrier, as each documents it (Telnyx message.finalized
   * delivery_failed with 40300, Twilio `failed` with ErrorCode 21610, Vonage `rejected` with 1240).
   */
  async sendReceipt(messageId: string, outcome: ReceiptOutcome = 'delivered'): Promise<number[]> {
    return Promise.all(this.handsetFor(messageId).map((sms) => this.postReceipt(sms, outcome)));
  }

  async start(): Promise<this> {
    await this.listen((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => void this.handle(req, res, body));
    });
    return this;
  }

  override async stop(): Promise<void> {
    await Promise.allSettled(this.receiptsSent);
    await super.stop();
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse, body: string): Promise<void> {
    const request = { method: req.method ?? 'GET', path: req.url ?? '', headers: req.headers, body };
    this.requests.push(request);
    if (request.method === 'GET') return this.answerLookup(request, res);
    const send = readSend(request);
    const hold = this.holds.shift();
    const scripted = hold?.answer ?? this.script.shift();
    const takes = !scripted || scripted.status < 300;
    const carrierId = (send && takes && scriptedId(send.carrier, scripted)) || newCarrierMessageId(send?.carrier ?? 'telnyx');
    const sms = send && takes ? this.take(send, carrierId) : undefined;
    if (hold) {
      hold.arrive(request);
      await hold.released;
    }
    if (scripted?.delayMs) await new Promise((r) => setTimeout(r, scripted.delayMs));
    if (sms && this.lost && this.lost.remaining > 0) {
      this.lost.remaining--;
      if (this.lost.kind === 'reset') return void req.socket.destroy();
      if (this.lost.kind === '504') return void res.writeHead(504, { 'content-type': 'text/html' }).end('<html><body>504 Gateway Time-out</body></html>');
      await new Promise((r) => setTimeout(r, this.lost!.slowMs));
    }
    const carrier = send?.carrier ?? 'telnyx';
    const status = scripted?.status ?? (carrier === 'twilio' ? 201 : carrier === 'vonage' ? 202 : 200);
    const accepted = carrier === 'twilio' ? { sid: carrierId, status: 'queued' } : carrier === 'vonage' ? { message_uuid: carrierId } : { data: { id: carrierId, record_type: 'message' } };
    if (res.destroyed) return;
    res.writeHead(status, { ...scripted?.headers, 'content-type': 'application/json' });
    res.end(JSON.stringify(scripted?.body ?? (status < 300 ? accepted : { errors: [{ code: String(status), title: 'scripted' }] })));
  }

  /** The carrier took the send: an SMS on the handset, and its receipt on its way if receipts go by themselves. */
  private take(send: ParsedSend, carrierId: string): HandsetSms {
    const sms: HandsetSms = { ...send, carrierId, at: new Date() };
    this.handset.push(sms);
    if (this.autoReceiptMs !== undefined) {
      this.receiptsSent.push(new Promise((r) => setTimeout(r, this.autoReceiptMs)).then(() => this.postReceipt(sms)).catch(() => undefined));
    }
    return sms;
  }

  private async postReceipt(sms: HandsetSms, outcome: ReceiptOutcome = 'delivered'): Promise<number> {
    const target = this.receiptTarget;
    if (!target) throw new Error('FakeCarrier.receiptsTo was not called');
    const optedOut = outcome === 'opted_out';
    if (sms.carrier === 'telnyx') {
      const receipt = JSON.parse(telnyxReceipt(sms.carrierId, optedOut ? 'delivery_failed' : 'delivered', { optedOut }));
      receipt.data.payload.webhook_url = sms.callbackUrl;
      const body = JSON.stringify(receipt);
      return (await fetch(atApp(target, sms.callbackUrl ?? '/webhooks/telnyx'), { method: 'POST', headers: target.telnyx.headers(body), body })).status;
    }
    if (sms.carrier === 'twilio') {
      const url = sms.callbackUrl!;
      const status = optedOut ? 'failed' : 'delivered';
      // https://www.twilio.com/docs/api/errors/21610: "Attempt to send to unsubscribed recipient"
      const fields = {
        MessageSid: sms.carrierId, SmsSid: sms.carrierId, MessageStatus: status, SmsStatus: status, AccountSid: DEV_TWILIO_ACCOUNT_SID, From: sms.from, To: sms.to, ApiVersion: '2010-04-01',
        ...(optedOut && { ErrorCode: '21610' }),
      };
      // Signed over the URL we were given (PUBLIC_BASE_URL's), posted where the test's app listens.
      return (await fetch(atApp(target, url), { method: 'POST', headers: twilioHeaders(DEV_TWILIO_AUTH_TOKEN, url, fields, randomUUID()), body: formBody(fields) })).status;
    }
    const body = JSON.stringify({
      message_uuid: sms.carrierId, to: sms.to.replace(/^\+/, ''), from: sms.from.replace(/^\+/, ''), timestamp: new Date().toISOString(), status: optedOut ? 'rejected' : 'delivered',
      usage: { currency: 'EUR', price: '0.0333' }, client_ref: sms.ourMessageId, channel: 'sms', sms: { count_total: '1' },
      // The Messages API's 1240 (vonage-messages-v1.json; Vonage's "Messaging Opted-out Numbers" guide)
      ...(optedOut && { error: { type: 'https://developer.vonage.com/api-errors/messages#1240', title: 1240, detail: 'Illegal Number - the user has already sent a STOP opt-out message', instance: randomUUID() } }),
    });
    return (await fetch(`${target.appUrl}/webhooks/vonage/messages`, { method: 'POST', headers: vonageHeaders(await vonageToken(DEV_VONAGE_SIGNATURE_SECRET, body)), body })).status;
  }

  /** The lookups, answered from the handset (empty while `lookupsShow` is false). */
  private answerLookup(request: CarrierRequest, res: http.ServerResponse): void {
    const url = new URL(request.path, 'http://fake.invalid');
    const q = url.searchParams;
    const shown = (carrier: CarrierName, from: string | null, to: string | null) =>
      this.lookupsShow ? this.handset.filter((s) => s.carrier === carrier && (!from || s.from === from) && (!to || s.to === to)) : [];
    const json = (status: number, body: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    /** Page `index` (from 0) of `items`, at the page size asked unless lookupPageSize is smaller. */
    const pageOf = <T>(items: T[], asked: number, index: number) => {
      const size = Math.max(1, Math.min(asked, this.lookupPageSize ?? asked));
      return { items: items.slice(index * size, (index + 1) * size), size, more: (index + 1) * size < items.length };
    };
    if (url.pathname === '/v2/detail_records') {
      const all = shown('telnyx', q.get('filter[cli]'), q.get('filter[cld]')).map((s) => ({
        record_type: 'message_detail_record', uuid: s.carrierId, cli: s.from, cld: s.to, direction: 'outbound', created_at: s.at.toISOString(),
        delivery_status_webhook_url: s.callbackUrl, status: 'delivered', message_type: 'SMS', parts: 1,
      }));
      const number = Number(q.get('page[number]') ?? 1);
      const page = pageOf(all, Number(q.get('page[size]') ?? 20), number - 1);
      return json(200, { data: page.items, meta: { page_number: number, page_size: page.size, total_pages: Math.max(1, Math.ceil(all.length / page.size)), total_results: all.length } });
    }
    if (/^\/twilio\/2010-04-01\/Accounts\/[^/]+\/Messages\.json$/.test(url.pathname)) {
      const all = shown('twilio', q.get('From'), q.get('To'))
        .sort((a, b) => b.at.getTime() - a.at.getTime())
        .map((s) => ({ sid: s.carrierId, body: s.text, from: s.from, to: s.to, direction: 'outbound-api', status: 'delivered', date_created: s.at.toUTCString(), date_sent: s.at.toUTCString(), num_segments: '1' }));
      const number = Number(q.get('Page') ?? 0);
      const page = pageOf(all, Number(q.get('PageSize') ?? 50), number);
      // Twilio's page links are paths from its API root (no /twilio prefix here), the PageToken included.
      const uri = (n: number) => `${url.pathname.replace(/^\/twilio/, '')}?${new URLSearchParams({ ...Object.fromEntries(q), Page: String(n), PageToken: `PASM${n}` })}`;
      return json(200, {
        messages: page.items, page: number, page_size: page.size, start: number * page.size, end: number * page.size + page.items.length,
        uri: uri(number), first_page_uri: uri(0), next_page_uri: page.more ? uri(number + 1) : null, previous_page_uri: number > 0 ? uri(number - 1) : null,
      });
    }
    if (url.pathname === '/v2/reports/records') {
      const all = shown('vonage', null, null).map((s) => ({
        message_id: s.carrierId, client_ref: s.ourMessageId, direction: 'outbound', from: s.from.replace(/^\+/, ''), to: s.to.replace(/^\+/, ''), date_received: s.at.toISOString(), status: 'delivered',
      }));
      // the cursor: the next page's index (opaque at Vonage)
      const index = Number(q.get('cursor') ?? 0);
      const page = pageOf(all, 1000, index);
      const next = new URL(`https://api.nexmo.com${url.pathname}`);
      for (const [k, v] of q) if (k !== 'cursor' && k !== 'iv') next.searchParams.set(k, v);
      next.searchParams.set('cursor', String(index + 1));
      next.searchParams.set('iv', 'fake-iv');
      return json(200, {
        request_id: randomUUID(), request_status: page.more ? 'TRUNCATED' : 'SUCCESS', product: 'MESSAGES', direction: 'outbound', items_count: page.items.length, records: page.items,
        ...(page.more && { cursor: String(index + 1), iv: 'fake-iv', _links: { next: { href: next.toString() } } }),
      });
    }
    json(404, { errors: [{ code: '404', title: 'no such lookup' }] });
  }
}

type ParsedSend = Omit<HandsetSms, 'carrierId' | 'at'>;

/** A callback URL we were given, at the test app's own address (its PUBLIC_BASE_URL names another port). */
function atApp(target: ReceiptTarget, callbackUrl: string): string {
  const url = new URL(callbackUrl, target.appUrl);
  return `${target.appUrl}${url.pathname}${url.search}`;
}

/** A send request as the carrier reads it: which carrier, the message, and our reference. */
function readSend(request: CarrierRequest): ParsedSend | undefined {
  try {
    if (request.path.startsWith('/twilio/')) {
      const form = new URLSearchParams(request.body);
      const callbackUrl = form.get('StatusCallback') ?? undefined;
      return { carrier: 'twilio', ourMessageId: messageIdFromUrl(callbackUrl), from: form.get('From') ?? '', to: form.get('To') ?? '', text: form.get('Body') ?? '', callbackUrl };
    }
    const json = JSON.parse(request.body) as Record<string, string | undefined>;
    if (request.path === '/v1/messages') {
      return { carrier: 'vonage', ourMessageId: json.client_ref, from: `+${json.from}`, to: `+${json.to}`, text: json.text ?? '', callbackUrl: undefined };
    }
    return { carrier: 'telnyx', ourMessageId: messageIdFromUrl(json.webhook_url), from: json.from ?? '', to: json.to ?? '', text: json.text ?? '', callbackUrl: json.webhook_url };
  } catch {
    return undefined;
  }
}

/** The carrier id a scripted success names, if it names one. */
/** A new message id as the carrier documents its shape: Twilio `SM` + 32 hex, Telnyx and Vonage a UUID. */
export function newCarrierMessageId(carrier: CarrierName): string {
  return carrier === 'twilio' ? `SM${randomUUID().replace(/-/g, '')}` : randomUUID();
}

function scriptedId(carrier: CarrierName, scripted: ScriptedAnswer | undefined): string | undefined {
  const body = scripted?.body as Record<string, unknown> | undefined;
  if (!body) return undefined;
  const id = carrier === 'twilio' ? body.sid : carrier === 'vonage' ? body.message_uuid : (body.data as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}
