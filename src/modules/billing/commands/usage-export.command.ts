import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { isoTimeOption } from '../../../platform/cli/options.js';
import { printResult, requireOption, type OutputOptions } from '../../../platform/cli/output.js';
import { monthBounds, PERIOD_PATTERN } from '../periods.js';
import { UsageExports } from '../usage-export.js';

interface UsageExportOptions extends OutputOptions {
  period?: string;
  from?: Date;
  to?: Date;
  out?: string;
}

@Command({
  name: 'usage:export',
  description:
    'Writes the usage ledger rows of a period (every account; JSON Lines, one row a line) to a file and records the export (period, row count, SHA-256); retention drops a usage partition only after a matching export covers it',
})
export class UsageExportCommand extends JsonCommand {
  constructor(private readonly exports: UsageExports) {
    super();
  }

  @Option({ flags: '--period <YYYY-MM>', description: 'a calendar month (UTC); or give --from and --to' })
  parsePeriod(value: string): string {
    if (!PERIOD_PATTERN.test(value)) throw new Error('--period must be a calendar month YYYY-MM');
    return value;
  }

  @Option({ flags: '--from <time>', description: 'start of the period (ISO 8601, included)' })
  parseFrom(value: string): Date {
    return isoTimeOption('--from', value);
  }

  @Option({ flags: '--to <time>', description: 'end of the period (ISO 8601, excluded); it must have passed' })
  parseTo(value: string): Date {
    return isoTimeOption('--to', value);
  }

  @Option({ flags: '--out <file>', description: 'the file to write (JSON Lines); required' })
  parseOut(value: string): string {
    return value;
  }

  async run(_: string[], options: UsageExportOptions): Promise<void> {
    const out = requireOption(options, 'out');
    const period = options.period !== undefined ? monthBounds(options.period) : options.from && options.to ? { from: options.from, to: options.to } : undefined;
    if (!period || (options.period !== undefined && (options.from || options.to))) throw new Error('give either --period YYYY-MM or both --from and --to');
    const recorded = await this.exports.export(period, out);
    printResult(options, { export: recorded }, `exported ${recorded.row_count} usage rows of ${recorded.period_from} .. ${recorded.period_to} to ${recorded.file} (sha256 ${recorded.sha256}), export ${recorded.id}`);
  }
}
