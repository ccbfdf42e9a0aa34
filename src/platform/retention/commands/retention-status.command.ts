import { Command } from 'nest-commander';
import { JsonCommand } from '../../cli/json-command.js';
import { printResult, type OutputOptions } from '../../cli/output.js';
import { PartitionMaintenance, type TableRetention } from '../partition-maintenance.js';

@Command({
  name: 'retention:status',
  description: 'Time-partitioned tables: their partitions (sizes, row estimates), what the next maintenance run will make and drop',
})
export class RetentionStatusCommand extends JsonCommand {
  constructor(private readonly maintenance: PartitionMaintenance) {
    super();
  }

  async run(_: string[], options: OutputOptions): Promise<void> {
    const tables = await this.maintenance.status();
    const data = tables.map((t) => ({
      table: t.table,
      retention_hours: t.retentionHours,
      period_seconds: t.periodSeconds,
      partitions: t.partitions.map((p) => ({
        name: p.name,
        from: p.from?.toISOString() ?? null,
        to: p.to.toISOString(),
        bytes: p.bytes,
        rows_estimate: p.rowsEstimate,
        detach_pending: p.detachPending,
      })),
      next_run: {
        create: t.plan.create.map((c) => ({ from: c.from.toISOString(), to: c.to.toISOString() })),
        drop: t.plan.expired.filter((p) => !t.held.includes(p.name)).map((p) => p.name),
        held: t.held,
      },
    }));
    printResult(options, { data }, tables.map(human).join('\n\n') || 'no partitioned tables');
  }
}

function human(t: TableRetention): string {
  const held = new Set(t.held);
  const lines = t.partitions.map((p) => {
    const fate = t.plan.expired.some((e) => e.name === p.name) ? (held.has(p.name) ? `  past retention, kept until ${t.heldUntil}` : '  next run drops it') : '';
    return `  ${p.name}  ${p.from?.toISOString() ?? '-∞'} .. ${p.to.toISOString()}  ${mib(p.bytes)}  ~${p.rowsEstimate ?? '?'} rows${fate}`;
  });
  const create = t.plan.create.length === 0 ? 'nothing' : t.plan.create.map((c) => `${c.from.toISOString()} .. ${c.to.toISOString()}`).join(', ');
  return [`${t.table} (retention ${t.retentionHours} h, period ${t.periodSeconds} s)`, ...lines, `  next run makes: ${create}`].join('\n');
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
