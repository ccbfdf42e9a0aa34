import { Injectable } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { MetricsRegistry } from '../metrics/metrics-registry.js';

/** Relay and job metrics; gauges that need a query (pending, queue depth) are read at scrape. */
@Injectable()
export class OutboxMetrics {
  readonly relayLag: Histogram;
  readonly redriven: Counter;
  readonly unfrozen: Counter;
  readonly jobOutcomes: Counter<'queue' | 'name' | 'outcome'>;

  constructor(metrics: MetricsRegistry) {
    this.relayLag = new Histogram({
      name: 'onceline_outbox_relay_lag_seconds',
      help: 'Time from a job being due (commit or run_at) to its publication in Redis',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [metrics.registry],
    });
    this.redriven = new Counter({
      name: 'onceline_outbox_redriven_total',
      help: 'Jobs published again by recovery because Postgres showed no outcome',
      registers: [metrics.registry],
    });
    this.unfrozen = new Counter({
      name: 'onceline_outbox_unfrozen_total',
      help: 'Redriven jobs whose finished copy in Redis (failed with no outcome in Postgres) was deleted so they run again',
      registers: [metrics.registry],
    });
    this.jobOutcomes = new Counter({
      name: 'onceline_job_outcomes_total',
      help: 'Job runs by outcome: completed, skipped (already done), retried, failed',
      labelNames: ['queue', 'name', 'outcome'],
      registers: [metrics.registry],
    });
  }
}
