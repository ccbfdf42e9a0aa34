import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { LocalCarrierServer } from './local-carrier-server.js';

export interface CarrierRequest {
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

/**
 * A real local HTTP server standing in for the Telnyx, Twilio and Vonage send APIs. It accepts by
 * default (same carrier id for the same Idempotency-Key, or Vonage client_ref), or answers from a script.
 */
export class FakeCarrier extends LocalCarrierServer {
  readonly requests: CarrierRequest[] = [];
  private readonly script: ScriptedAnswer[] = [];
  private readonly holds: Hold[] = [];
  private readonly idsByKey = new Map<string, string>();

  /** The next sends get these answers, in order; then it accepts again. */
  answerNext(...answers: ScriptedAnswer[]): void {
    this.script.push(...answers);
  }

  /**
   * The next send request that arrives is held open (a carrier call still in flight) until
   * `release()`; then it gets `answer` if given, else the script's next answer or the default.
   */
  holdNext(answer?: ScriptedAnswer): HeldRequest {
    let arrive!: (request: CarrierRequest) => void;
    let release!: () => void;
    const arrived = new Promise<CarrierRequest>((resolve) => (arrive = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.holds.push({ answer, arrive, released });
    return { arrived, release };
  }

  /** The sends of our message `messageId` (its Idempotency-Key; Vonage: its client_ref). */
  sendsFor(messageId: string): CarrierRequest[] {
    return this.requests.filter((r) => (r.headers['idempotency-key'] ?? vonageClientRef(r.body)) === messageId);
  }

  async start(): Promise<this> {
    await this.listen((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', async () => {
        const request = { path: req.url ?? '', headers: req.headers, body };
        this.requests.push(request);
        const hold = this.holds.shift();
        if (hold) {
          hold.arrive(request);
          await hold.released;
        }
        const scripted = hold?.answer ?? this.script.shift();
        if (scripted?.delayMs) await new Promise((r) => setTimeout(r, scripted.delayMs));
        const key = String(req.headers['idempotency-key'] ?? vonageClientRef(body) ?? randomUUID());
        const twilio = (req.url ?? '').startsWith('/twilio/');
        const vonage = req.url === '/v1/messages';
        const id = this.idsByKey.get(key) ?? (twilio ? `SM${randomUUID().replace(/-/g, '')}` : randomUUID());
        this.idsByKey.set(key, id);
        const status = scripted?.status ?? (twilio ? 201 : vonage ? 202 : 200);
        const accepted = twilio ? { sid: id, status: 'queued' } : vonage ? { message_uuid: id } : { data: { id, record_type: 'message' } };
        res.writeHead(status, { ...scripted?.headers, 'content-type': 'application/json' });
        res.end(JSON.stringify(scripted?.body ?? (status < 300 ? accepted : { errors: [{ code: String(status), title: 'scripted' }] })));
      });
    });
    return this;
  }
}

/** Vonage's send names our message in the body (client_ref), having no Idempotency-Key. */
function vonageClientRef(body: string): string | undefined {
  try {
    const ref = (JSON.parse(body) as { client_ref?: unknown }).client_ref;
    return typeof ref === 'string' ? ref : undefined;
  } catch {
    return undefined;
  }
}
