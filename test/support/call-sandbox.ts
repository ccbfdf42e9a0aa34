import { expect } from '@jest/globals';
import { TelnyxWebhook } from 'telnyx/lib/webhooks';
import { telnyxPublicKey, telnyxSignatureProblem } from '../../src/carriers/telnyx/telnyx-signature.js';
import { DEV_TELNYX_API_KEY } from '../../src/telephony/dev-credentials.js';
import { telnyxDevKeyPair } from '../../src/telephony/telnyx-dev-key.js';
import { startSandboxChild, type SandboxChild } from './sandbox-child.js';
import { waitFor } from './wait.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from './webhook-receiver.js';

/** One Telnyx call event as the app would receive it. */
export interface CallEvent {
  id: string;
  event_type: string;
  occurred_at: string;
  payload: Record<string, any>;
  attempt: number;
  request: ReceivedRequest;
}

export interface Json {
  status: number;
  body: any;
}

/**
 * The carrier sandbox as a child process with a local receiver playing the app's
 * /webhooks/telnyx, and helpers to drive its Telnyx Call Control emulation and read the call
 * events that came back (signatures checked with our verifier and the official telnyx package).
 */
export class CallSandbox {
  private constructor(
    readonly sandbox: SandboxChild,
    readonly receiver: WebhookReceiver,
    private readonly publicKey: string,
  ) {}

  static async start(env: Record<string, string> = {}): Promise<CallSandbox> {
    const seed = 'sandbox-calls-test-seed';
    const receiver = await startWebhookReceiver();
    receiver.fallback = { status: 200, body: '{"status":"accepted"}' };
    const sandbox = await startSandboxChild({ PUBLIC_BASE_URL: receiver.url, SANDBOX_TELNYX_SEED: seed, LOG_LEVEL: 'error', ...env });
    return new CallSandbox(sandbox, receiver, telnyxDevKeyPair(seed).publicKey);
  }

  get url(): string {
    return this.sandbox.url;
  }

  async stop(): Promise<void> {
    await this.sandbox.stop();
    await this.receiver.close();
  }

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Json> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${DEV_TELNYX_API_KEY}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    return { status: res.status, body: parsed };
  }

  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<Json> {
    return this.request('POST', path, body ?? {}, headers);
  }

  /** POST /v2/calls with a valid body, `fields` on top. */
  dial(fields: Record<string, unknown>, headers?: Record<string, string>): Promise<Json> {
    return this.post('/v2/calls', { connection_id: 'conn-test', from: '+15550001111', timeout_secs: 20, ...fields }, headers);
  }

  action(callControlId: string, action: string, body: Record<string, unknown> = {}, headers?: Record<string, string>): Promise<Json> {
    return this.post(`/v2/calls/${encodeURIComponent(callControlId)}/actions/${action}`, body, headers);
  }

  /** A handset calls `to`: the caller's leg. */
  async inbound(fields: Record<string, unknown>, headers?: Record<string, string>): Promise<{ call_control_id: string; call_session_id: string; call_leg_id: string }> {
    const res = await this.post('/sandbox/calls/inbound', { from: '+13125550001', ...fields }, headers);
    expect(res.status).toBe(202);
    return res.body.data;
  }

  async behaviours(body: unknown): Promise<void> {
    const res = await this.post('/sandbox/calls/behaviours', body);
    expect(res).toMatchObject({ status: 200 });
  }

  async leg(callControlId: string): Promise<any> {
    return (await this.request('GET', `/sandbox/calls/${encodeURIComponent(callControlId)}`)).body.data;
  }

  stats(): Promise<any> {
    return this.sandbox.stats();
  }

  /** Every call event received so far, in arrival order; optionally only those of one leg or session. */
  events(filter: { leg?: string; session?: string; type?: string } = {}): CallEvent[] {
    return this.receiver.requests
      .filter((r) => r.path === '/webhooks/telnyx')
      .map((request) => {
        const { data, meta } = JSON.parse(request.body);
        return { ...data, attempt: meta.attempt, request } as CallEvent;
      })
      .filter((e) => e.event_type.startsWith('call.'))
      .filter((e) => (filter.leg === undefined || e.payload.call_control_id === filter.leg)
        && (filter.session === undefined || e.payload.call_session_id === filter.session)
        && (filter.type === undefined || e.event_type === filter.type));
  }

  /** Waits until events of that filter include every type in `types` (at least once each). */
  waitForEvents(filter: { leg?: string; session?: string }, types: string[], timeoutMs = 15000): Promise<CallEvent[]> {
    return waitFor(() => this.events(filter), (es) => types.every((t) => es.some((e) => e.event_type === t)), { timeoutMs, what: `${types.join(', ')} for ${JSON.stringify(filter)}` });
  }

  /** Waits for no webhook to be pending or queued. */
  async idle(): Promise<void> {
    await waitFor(() => this.stats(), (s) => s.webhooks.pending === 0, { what: 'the sandbox to deliver every webhook' });
  }

  /** Checks the event's signature with our verifier and with the official telnyx package. */
  async expectSigned(event: CallEvent): Promise<void> {
    const { headers, body } = event.request;
    const signature = headers['telnyx-signature-ed25519']!;
    const timestamp = headers['telnyx-timestamp']!;
    expect(telnyxSignatureProblem(telnyxPublicKey(this.publicKey), { signature, timestamp, rawBody: Buffer.from(body) }, 300)).toBeUndefined();
    await expect(new TelnyxWebhook(this.publicKey).verify(body, { 'telnyx-signature-ed25519': signature, 'telnyx-timestamp': timestamp })).resolves.toBeUndefined();
  }
}

export const clientState = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64');

let numberSeq = 0;
/** A number no other test of the file uses (behaviours are per number and kept by the sandbox). */
export function freshNumber(): string {
  numberSeq++;
  return `+1555${String(process.pid % 1000).padStart(3, '0')}${String(numberSeq).padStart(4, '0')}`;
}
