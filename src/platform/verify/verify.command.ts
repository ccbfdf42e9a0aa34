import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../cli/json-command.js';
import { wholeNumberOption } from '../cli/options.js';
import { printResult, setFailed, type OutputOptions } from '../cli/output.js';
import { VerifyService, type VerifyReport } from './verify.service.js';

interface VerifyOptions extends OutputOptions {
  limit?: number;
}

@Command({
  name: 'verify',
  description: 'One read-only pass over the exactly-once invariants, each with a count and example ids; exit 1 when any is broken',
})
export class VerifyCommand extends JsonCommand {
  constructor(private readonly verify: VerifyService) {
    super();
  }

  @Option({ flags: '--limit <n>', description: 'example ids per broken invariant (default 10, max 1000)' })
  parseLimit(value: string): number {
    return wholeNumberOption('--limit', value, 1000);
  }

  async run(_: string[], options: VerifyOptions): Promise<void> {
    const report = await this.verify.run({ limit: options.limit ?? 10 });
    printResult(options, report, humanReport(report));
    // Not process.exit: the application still closes its pool on the way out.
    if (!report.ok) setFailed();
  }
}

function humanReport(report: VerifyReport): string {
  const width = Math.max(...report.invariants.map((i) => i.name.length));
  const lines = report.invariants.map((i) =>
    i.ok
      ? `ok      ${i.name}`
      : `BROKEN  ${i.name.padEnd(width)}  ${i.count}  e.g. ${i.examples.join(', ')}\n        ${' '.repeat(width)}  (${i.description})`,
  );
  const summary = report.ok
    ? `all ${report.invariants.length} invariants hold (snapshot ${report.checked_at})`
    : `${report.broken} of ${report.invariants.length} invariants broken (snapshot ${report.checked_at})`;
  return [...lines, summary].join('\n');
}
