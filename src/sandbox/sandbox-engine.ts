import type { IncomingMessage, ServerResponse } from 'node:http';
import { BoundedTimers } from './bounded-timers.js';
import { formatChaos, parseChaos, pickSendFault, type Chaos } from './chaos.js';
import { nonLoopbackProblem } from '../platform/net/loopback.js';
import { header, sendJson } from './sandbox-http.js';
import { bump, emptyStats, type SandboxStats } from './sandbox-stats.js';
import { SenderThroughput } from './sender-throughput.js';
import { WebhookSeries, type CarrierWebhook } from './webhook-series.js';
import type { SandboxMessage } from './sandbox-message.js';

/**
 * A "timeout" fault holds the answer, then hangs up: longer than a carrier client should wait
 * (the app's gives up after 10 s), as a carrier that accepted and never answered would.
 */
const HANG_MS = 11_000;
/** Idempotency keys remembered (oldest forgotten first): plenty for any demo or test run. */
const MAX_REMEMBERED_KEYS = 100_000;

export interface Answer {
  status: number;
  body: unknown;
}

/** One send-API call, described by the carrier-specific route that parsed it. */
export interface SendCall {
  carrier: 'telnyx' | 'twilio' | 'vonage';
  /** The sending number (E.164) and the message's segments: what the throughput limit counts. */
  from: string;
  parts: number;
  idempotencyKey: string | undefined;
  chaos: Chaos;
  /** Creates the message: its answer, the webhooks that follow, and the message (kept for the lookups). Called once per send taken. */
  accept(): { answer: Answer; webhooks: CarrierWebhook[]; message: SandboxMessage };
  /** The carrier's 4xx refusal, for `reject`. */
  rejection: Answer;
  /** The carrier's body for a 500 / 503, and for a 429 (too fast for the sending number). */
  failure(status: 429 | 500 | 503): unknown;
}

/** A message the sandbox took, as its lookups list it. */
export interface SentMessage {
  carrier: SendCall['carrier'];
  message: SandboxMessage;
}

/**
 * The carrier-neutral core of the sandbox: chaos settings, send faults, the messages taken (for
 * the lookups), webhook series and counters. Idempotency keys are ignored on sends, as the real
 * carriers ignore them (none of their send operations declares one): only `honourIdempotency`
 * (SANDBOX_HONOUR_IDEMPOTENCY=1, for comparison) remembers them. Carrier routes (telnyx/,
 * twilio/, vonage/) parse requests and build payloads.
 */
export class SandboxEngine {
  stats: SandboxStats = emptyStats();
  private chaos: Chaos;
  readonly timers = new BoundedTimers();
  private readonly answers = new Map<string, Answer>();
  /** The messages taken, oldest first (the oldest forgotten past MAX_REMEMBERED_KEYS). */
  readonly sent: SentMessage[] = [];
  private readonly running = new Set<Promise<void>>();
  private readonly urlChecks = new Map<string, Promise<string | undefined>>();

  readonly throughput: SenderThroughput;

  constructor(
    defaultChaos: string,
    private readonly allowRemote: boolean,
    readonly log: (line: string) => void,
    sendRatePerNumber = 0,
    private readonly honourIdempotency = false,
  ) {
    this.chaos = parseChaos(defaultChaos);
    this.throughput = new SenderThroughput(sendRatePerNumber);
  }

  get chaosSpec(): string {
    return formatChaos(this.chaos);
  }

  /** Replaces the chaos of every later request (POST /sandbox/chaos); throws ChaosSyntaxError. */
  setChaos(spec: string): void {
    this.chaos = parseChaos(spec);
  }

  /** The current chaos with the request's `x-sandbox-chaos` knobs on top; throws ChaosSyntaxError. */
  chaosFor(req: IncomingMessage): Chaos {
    return parseChaos(header(req, 'x-sandbox-chaos'), this.chaos);
  }

  /** Counters start again from zero; series still running stay counted as pending, live call legs as live. */
  resetStats(): void {
    const pending = this.stats.webhooks.pending;
    const liveLegs = this.stats.calls.live_legs;
    this.stats = emptyStats();
    this.stats.webhooks.pending = pending;
    this.stats.calls.live_legs = liveLegs;
  }

  /** Why webhooks may not go to `url` (not loopback, unless SANDBOX_ALLOW_REMOTE=1). */
  urlProblem(url: string): Promise<string | undefined> {
    if (this.allowRemote) return Promise.resolve(undefined);
    const origin = safeOrigin(url);
    let check = this.urlChecks.get(origin);
    if (!check) {
      check = nonLoopbackProblem(url);
      this.urlChecks.set(origin, check);
    }
    return check;
  }

  /** Starts delivering a series; the promise never rejects. */
  runSeries(chaos: Chaos, webhooks: CarrierWebhook[]): Promise<void> {
    const run = new WebhookSeries(this.timers, () => this.stats, chaos, this.log).run(webhooks);
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    return run;
  }

  async send(res: ServerResponse, call: SendCall): Promise<void> {
    const s = this.stats.sends;
    const fault = pickSendFault(call.chaos);
    if (fault === 'reject') {
      s.rejected++;
      return sendJson(res, call.rejection.status, call.rejection.body);
    }
    if (fault === '500' || fault === '503') {
      s.failed[fault]++;
      const status = Number(fault) as 500 | 503;
      return sendJson(res, status, call.failure(status));
    }
    const memoryKey = this.honourIdempotency && call.idempotencyKey && `${call.carrier}:${call.idempotencyKey}`;
    let answer = memoryKey ? this.answers.get(memoryKey) : undefined;
    let series: Promise<void> | undefined;
    if (answer) {
      s.replayed++;
    } else {
      // A new message past its number's throughput: refused, as a carrier does, and counted.
      const retryAfter = this.throughput.take(call.from, call.parts);
      if (retryAfter !== undefined) {
        s.throttled++;
        bump(s.throttled_by_number, call.from);
        return sendJson(res, 429, call.failure(429), { 'retry-after': String(retryAfter) });
      }
      const accepted = call.accept();
      answer = accepted.answer;
      this.sent.push({ carrier: call.carrier, message: accepted.message });
      if (this.sent.length > MAX_REMEMBERED_KEYS) this.sent.shift();
      if (memoryKey) this.remember(memoryKey, answer);
      s.accepted++;
      bump(s.accepted_by_number, call.from);
      series = this.runSeries(call.chaos, accepted.webhooks);
    }
    if (fault === 'timeout') {
      // Accepted (and its webhooks on their way), but the answer never arrives: the worst case
      // for a sender, which must find out (the webhooks naming its reference, the lookups)
      // rather than send again.
      s.failed.timeout++;
      return this.holdUnanswered(res);
    }
    if (series && call.chaos.earlyReceipt) await series;
    sendJson(res, answer.status, answer.body);
  }

  async close(): Promise<void> {
    this.timers.close();
    await Promise.allSettled([...this.running]);
  }

  private remember(key: string, answer: Answer): void {
    this.answers.set(key, answer);
    if (this.answers.size > MAX_REMEMBERED_KEYS) this.answers.delete(this.answers.keys().next().value!);
  }

  /** Holds the answer longer than a client waits, then drops the connection (the `timeout` fault). */
  async holdUnanswered(res: ServerResponse): Promise<void> {
    await new Promise<void>((resolve) => {
      res.once('close', resolve);
      this.timers.sleep(HANG_MS).then(resolve, resolve);
    });
    res.destroy();
  }
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
