import type { Chaos } from '../chaos.js';
import type { SandboxEngine } from '../sandbox-engine.js';
import type { CarrierWebhook } from '../webhook-series.js';

/** Under `reorder`, each event of a call is held a random 0..this (or delay_ms, if longer) and raced. */
export const REORDER_WINDOW_MS = 300;

/**
 * The webhooks of one call, emitted one by one as the call evolves (not a series known up front).
 * Without `reorder` they go out in the order they happened, each after the previous one is
 * delivered (its copies and retries included); with `reorder` each is held a random while and
 * they race, so a later event can overtake an earlier one. Every event goes through the engine's
 * WebhookSeries, so duplicate / resign / delay_ms apply as to messaging. Queued events count as
 * pending in the stats from the moment they are pushed.
 */
export class CallWebhookQueue {
  private tail: Promise<void> = Promise.resolve();

  constructor(
    private readonly engine: SandboxEngine,
    private readonly chaos: Chaos,
    private readonly random: () => number = Math.random,
  ) {}

  /** Resolves once this event is delivered (or given up); never rejects. */
  push(webhook: CarrierWebhook): Promise<void> {
    this.engine.stats.webhooks.pending++;
    const deliver = () => this.engine.runSeries(this.chaos, [webhook]);
    let delivered: Promise<void>;
    if (this.chaos.reorder) {
      const window = Math.max(REORDER_WINDOW_MS, this.chaos.delayMs);
      delivered = this.engine.timers.sleep(Math.floor(this.random() * (window + 1))).then(deliver, () => undefined);
    } else {
      delivered = this.tail.then(() => (this.engine.timers.closed ? undefined : deliver()));
      this.tail = delivered;
    }
    return delivered.finally(() => {
      this.engine.stats.webhooks.pending--;
    });
  }
}
