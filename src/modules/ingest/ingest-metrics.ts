import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsRegistry } from '../../platform/metrics/metrics-registry.js';

/** Ingest's group commit, as Prometheus sees it. */
@Injectable()
export class IngestMetrics {
  readonly batchSize: Histogram;
  readonly batchFailures: Counter;
  readonly refusedOverloaded: Counter;
  private waiting: () => number = () => 0;

  constructor(metrics: MetricsRegistry) {
    const read = () => this.waiting();
    new Gauge({
      name: 'onceline_ingest_waiting_deliveries',
      help: 'Verified carrier webhooks waiting for a batch transaction to take them',
      registers: [metrics.registry],
      collect() {
        this.set(read());
      },
    });
    this.batchSize = new Histogram({
      name: 'onceline_ingest_batch_size',
      help: 'Carrier webhooks stored per ingest transaction',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers: [metrics.registry],
    });
    this.batchFailures = new Counter({
      name: 'onceline_ingest_batch_failures_total',
      help: 'Ingest transactions that did not commit (each of their deliveries answered 503)',
      registers: [metrics.registry],
    });
    this.refusedOverloaded = new Counter({
      name: 'onceline_ingest_refused_overloaded_total',
      help: 'Carrier webhooks answered 503 at once because INGEST_PENDING_MAX deliveries were already being verified or stored',
      registers: [metrics.registry],
    });
  }

  /** Where the waiting-deliveries gauge reads its value at scrape time. */
  readWaitingFrom(source: () => number): void {
    this.waiting = source;
  }
}
