import { Injectable, Logger } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { MetricsRegistry } from '../metrics/metrics-registry.js';
import { VerifyService, type VerifyReport } from './verify.service.js';

/** A scrape finding the last pass older than this starts a new one (and is answered from the last). */
export const INVARIANTS_REFRESH_AFTER_MS = 60_000;
/** A pass started by a scrape has each statement cancelled after this long. */
const PASS_STATEMENT_TIMEOUT_MS = 30_000;

/**
 * `onceline_invariants_broken{invariant}`: the rows breaking each invariant, as of the last pass.
 * Computed where /metrics is served (the api role: the relay has no HTTP listener), at most once
 * per INVARIANTS_REFRESH_AFTER_MS per process, and never on the scrape's own time except the
 * first: a stale scrape starts a pass in the background and answers with the previous one.
 */
@Injectable()
export class InvariantMetrics {
  private readonly logger = new Logger(InvariantMetrics.name);
  private last?: VerifyReport;
  /** When the last pass started, failed ones included: a failing database is not retried per scrape. */
  private startedAtMs = -Infinity;
  private refreshing?: Promise<void>;

  constructor(
    metrics: MetricsRegistry,
    private readonly verify: VerifyService,
  ) {
    const current = () => this.current();
    new Gauge({
      name: 'onceline_invariants_broken',
      help: 'Rows breaking each exactly-once invariant at the last verify pass (0: it holds); see `onceline verify`',
      labelNames: ['invariant'],
      registers: [metrics.registry],
      async collect() {
        for (const invariant of (await current())?.invariants ?? []) this.set({ invariant: invariant.name }, invariant.count);
      },
    });
    new Gauge({
      name: 'onceline_invariants_checked_timestamp_seconds',
      help: 'Snapshot time of the verify pass behind onceline_invariants_broken',
      registers: [metrics.registry],
      async collect() {
        const report = await current();
        if (report) this.set(Date.parse(report.checked_at) / 1000);
      },
    });
  }

  /** The last pass; starts a new one when it is stale; waits only when there is none yet. */
  private async current(): Promise<VerifyReport | undefined> {
    if (!this.refreshing && Date.now() - this.startedAtMs >= INVARIANTS_REFRESH_AFTER_MS) {
      this.startedAtMs = Date.now();
      this.refreshing = this.refresh();
    }
    if (!this.last) await this.refreshing;
    return this.last;
  }

  private async refresh(): Promise<void> {
    try {
      this.last = await this.verify.run({ limit: 0, statementTimeoutMs: PASS_STATEMENT_TIMEOUT_MS });
    } catch (err) {
      // The previous values stay (their timestamp ages); the next scrape tries again.
      this.logger.warn(`invariant pass for /metrics failed: ${(err as Error).message}`);
    } finally {
      this.refreshing = undefined;
    }
  }
}
