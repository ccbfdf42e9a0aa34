import { Command } from 'nest-commander';
import { JsonCommand } from '../../cli/json-command.js';
import { printResult, type OutputOptions } from '../../cli/output.js';
import { AppConfig } from '../../config/app-config.js';
import { migrate } from '../migrator.js';

@Command({ name: 'migrate', description: 'Create the database if needed and apply pending migrations (idempotent)' })
export class MigrateCommand extends JsonCommand {
  constructor(private readonly config: AppConfig) {
    super();
  }

  async run(_: string[], options: OutputOptions): Promise<void> {
    const result = await migrate(this.config.DATABASE_URL);
    printResult(options, { applied: result.applied, already_applied: result.alreadyApplied },
      `applied ${result.applied.length} migration(s)${result.applied.length ? `: ${result.applied.join(', ')}` : ''}; ${result.alreadyApplied.length} already applied`);
  }
}
