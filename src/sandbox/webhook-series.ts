import { randomUUID } from 'node:crypto';
import { SandboxClosed, type BoundedTimers } from './bounded-timers.js';
import { shuffle, type Chaos } from './chaos.js';
import type { SandboxStats } from './sandbox-stats.js';

/** One delivery's bytes and headers, signed at the moment it is sent. */
export interface RenderedWebhook {
  body: string;
  headers: Record<string, string>;
}

/** A carrier event the sandbox sends to the app; the carrier-specific part lives in telnyx/, twilio/ and vonage/. */
export interface CarrierWebhook {
  /** e.g. `telnyx message.finalized`, for logs. */
  kind: string;
  url: string;
  /** Waited before this step of a series (after the previous step). */
  afterMs: number;
  /** Counted as a contradiction in the stats. */
  contradiction?: boolean;
  /** The event id of the original delivery. */
  eventId: string;
  /**
   * Bytes and headers for delivering event `eventId` for the `attempt`-th time (Telnyx puts the
   * attempt in the signed body, so every retry has new bytes and a new signature). A promise for
   * carriers whose signing library is asynchronous (Vonage's JWT).
   */
  render(eventId: string, attempt: number): RenderedWebhook | Promise<RenderedWebhook>;
}

interface Delivery {
  webhook: CarrierWebhook;
  eventId: string;
}

/** Attempts per delivery: a non-2xx or no answer is retried like a carrier does. */
const ATTEMPTS = 3;
const RETRY_BASE_MS = 250;
/** Telnyx gives up on an endpoint after 2 s; we are a little more patient with a busy dev machine. */
const DELIVERY_TIMEOUT_MS = 5000;

/**
 * Delivers a series of carrier webhooks (e.g. message.sent then message.finalized) under chaos:
 * copies, re-signed copies, random delays, reordering. Every wait goes through BoundedTimers.
 */
export class WebhookSeries {
  private readonly attempts = new Map<string, number>();

  constructor(
    private readonly timers: BoundedTimers,
    /** The current counters (a reset replaces the object mid-series; pending must follow it). */
    private readonly stats: () => SandboxStats,
    private readonly chaos: Chaos,
    private readonly log: (line: string) => void,
  ) {}

  /** Resolves when every delivery of the series is done (never rejects). */
  async run(steps: CarrierWebhook[]): Promise<void> {
    this.stats().webhooks.pending++;
    try {
      this.stats().webhooks.events += steps.length;
      this.stats().webhooks.contradictions += steps.filter((s) => s.contradiction).length;
      const groups = steps.map((step) => this.copies(step));
      if (this.chaos.reorder) {
        for (const delivery of shuffle(groups.flat())) {
          await this.timers.sleep(this.jitter());
          await this.deliver(delivery);
        }
      } else {
        for (const [i, group] of groups.entries()) {
          await this.timers.sleep(steps[i]!.afterMs);
          // Copies of one event race each other, as a carrier's retry can race its original.
          await Promise.all(group.map(async (d) => {
            await this.timers.sleep(this.jitter());
            await this.deliver(d);
          }));
        }
      }
    } catch (err) {
      if (!(err instanceof SandboxClosed)) this.log(`webhook series failed: ${(err as Error).message}`);
    } finally {
      this.stats().webhooks.pending--;
    }
  }

  /**
   * The original plus duplicate-1 copies. With `resign` the copies alternate: one under a new
   * event id (a re-signed retry: passes a dedupe on event ids), then one repeating the same id.
   */
  private copies(webhook: CarrierWebhook): Delivery[] {
    const deliveries: Delivery[] = [{ webhook, eventId: webhook.eventId }];
    for (let copy = 2; copy <= this.chaos.duplicate; copy++) {
      const resigned = this.chaos.resign && copy % 2 === 0;
      deliveries.push({ webhook, eventId: resigned ? randomUUID() : webhook.eventId });
      this.stats().webhooks.duplicates++;
      if (resigned) this.stats().webhooks.resigned++;
    }
    return deliveries;
  }

  private jitter(): number {
    return this.chaos.delayMs > 0 ? Math.floor(Math.random() * (this.chaos.delayMs + 1)) : 0;
  }

  private nextAttempt(eventId: string): number {
    const attempt = (this.attempts.get(eventId) ?? 0) + 1;
    this.attempts.set(eventId, attempt);
    return attempt;
  }

  private async deliver({ webhook, eventId }: Delivery): Promise<void> {
    const w = () => this.stats().webhooks;
    for (let i = 0; i < ATTEMPTS; i++) {
      if (i > 0) {
        w().retries++;
        await this.timers.sleep(RETRY_BASE_MS * 2 ** (i - 1));
      }
      const { body, headers } = await webhook.render(eventId, this.nextAttempt(eventId));
      w().deliveries++;
      let status = 'network';
      try {
        const response = await fetch(webhook.url, {
          method: 'POST',
          headers,
          body,
          redirect: 'manual',
          signal: AbortSignal.any([this.timers.signal, AbortSignal.timeout(DELIVERY_TIMEOUT_MS)]),
        });
        status = String(response.status);
        const answer = await response.text();
        w().statuses[status] = (w().statuses[status] ?? 0) + 1;
        if (response.ok) {
          const said = parseStatus(answer);
          if (said === 'accepted' || said === 'duplicate') w().answered[said]++;
          return;
        }
      } catch (err) {
        if (this.timers.closed) throw new SandboxClosed();
        w().statuses.network = (w().statuses.network ?? 0) + 1;
        this.log(`${webhook.kind} to ${webhook.url}: ${describe(err)}`);
        continue;
      }
      this.log(`${webhook.kind} to ${webhook.url}: answered ${status}`);
    }
    w().failed++;
  }
}

function parseStatus(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { status?: unknown };
    return typeof parsed.status === 'string' ? parsed.status : undefined;
  } catch {
    return undefined;
  }
}

/** fetch hides the reason (ECONNREFUSED, timeout) in `cause`. */
function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}
