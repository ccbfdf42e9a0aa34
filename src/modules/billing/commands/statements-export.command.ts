import { writeFile } from 'node:fs/promises';
import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { cliStreams, requireOption, type OutputOptions } from '../../../platform/cli/output.js';
import { PERIOD_PATTERN } from '../periods.js';
import { statementCsv } from '../statement-csv.js';
import { Statements } from '../statements.js';

interface ExportOptions extends OutputOptions {
  account?: string;
  period?: string;
  format?: 'csv' | 'json';
  out?: string;
}

@Command({
  name: 'statements:export',
  description: "Writes an account's monthly statement (as GET /v2/statements answers it): every usage row of the month with its cause, summing to GET /v2/usage",
})
export class StatementsExportCommand extends JsonCommand {
  constructor(private readonly statements: Statements) {
    super();
  }

  @Option({ flags: '--account <id>', description: 'the account (acc_…)' })
  parseAccount(value: string): string {
    return value;
  }

  @Option({ flags: '--period <YYYY-MM>', description: 'the calendar month (UTC)' })
  parsePeriod(value: string): string {
    if (!PERIOD_PATTERN.test(value)) throw new Error('--period must be a calendar month YYYY-MM');
    return value;
  }

  @Option({ flags: '--format <csv|json>', description: 'csv: one line per usage row and a total; json: the statement document (default)' })
  parseFormat(value: string): 'csv' | 'json' {
    if (value !== 'csv' && value !== 'json') throw new Error('--format must be csv or json');
    return value;
  }

  @Option({ flags: '--out <file>', description: 'write to this file instead of stdout' })
  parseOut(value: string): string {
    return value;
  }

  async run(_: string[], options: ExportOptions): Promise<void> {
    const account = requireOption(options, 'account');
    const period = requireOption(options, 'period');
    const statement = await this.statements.of(account, period);
    if (!statement) throw new Error('--period must be a calendar month YYYY-MM');
    const text = options.format === 'csv' ? statementCsv(statement) : `${JSON.stringify(statement)}\n`;
    if (options.out) await writeFile(options.out, text);
    else cliStreams().out(text);
  }
}
