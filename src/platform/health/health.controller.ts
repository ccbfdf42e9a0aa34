import { Controller, Get, Header, HttpCode, ServiceUnavailableException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { MetricsRegistry } from '../metrics/metrics-registry.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { Queues } from '../outbox/queues.js';
import { RedisService } from '../redis/redis.service.js';
import { queryRows } from '../database/tx.js';

const READY_TIMEOUT_MS = 2000;

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);
}

@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly dataSource: DataSource,
    private readonly queues: Queues,
    private readonly redis: RedisService,
    private readonly outbox: OutboxService,
    private readonly metrics: MetricsRegistry,
  ) {}

  @Get('health/live')
  live() {
    return { status: 'ok' };
  }

  @Get('health/ready')
  async ready() {
    const [postgres, redis] = await Promise.all([
      within(queryRows(this.dataSource.manager, 'SELECT 1'), READY_TIMEOUT_MS).then(() => 'ok', () => 'unavailable'),
      within(this.redis.ping(), READY_TIMEOUT_MS).then(() => 'ok', () => 'unavailable'),
    ]);
    const checks = { postgres, redis };
    if (postgres !== 'ok' || redis !== 'ok') {
      throw new ServiceUnavailableException({ code: 'not_ready', title: 'Not ready', detail: JSON.stringify(checks) });
    }
    return { status: 'ok', checks };
  }

  @Get('metrics')
  @HttpCode(200)
  @Header('content-type', 'text/plain; version=0.0.4')
  async metricsText(): Promise<string> {
    const lines: string[] = [];
    const status = await this.outbox.status().catch(() => undefined);
    if (status) {
      lines.push('# HELP onceline_outbox_pending Outbox jobs committed but not yet relayed');
      lines.push('# TYPE onceline_outbox_pending gauge', `onceline_outbox_pending ${status.pending}`);
      lines.push('# HELP onceline_outbox_oldest_pending_seconds Age of the oldest due unrelayed job');
      lines.push('# TYPE onceline_outbox_oldest_pending_seconds gauge');
      lines.push(`onceline_outbox_oldest_pending_seconds ${status.oldest_pending_seconds}`);
    }
    const depths = await within(
      Promise.all(this.queues.all().map(async (q) => [q.name, await q.getJobCounts('waiting', 'active', 'delayed', 'failed')] as const)),
      READY_TIMEOUT_MS,
    ).catch(() => []);
    if (depths.length > 0) {
      lines.push('# HELP onceline_queue_jobs Jobs in each BullMQ queue by state', '# TYPE onceline_queue_jobs gauge');
      for (const [queue, counts] of depths) {
        for (const [state, n] of Object.entries(counts)) lines.push(`onceline_queue_jobs{queue="${queue}",state="${state}"} ${n}`);
      }
    }
    return (await this.metrics.registry.metrics()) + lines.join('\n') + '\n';
  }
}
