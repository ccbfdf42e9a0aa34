import { Command } from 'nest-commander';
import { JsonCommand } from '../../cli/json-command.js';
import { printResult, type OutputOptions } from '../../cli/output.js';
import { OutboxService } from '../outbox.service.js';

@Command({ name: 'outbox:status', description: 'Jobs committed but not yet relayed to Redis' })
export class OutboxStatusCommand extends JsonCommand {
  constructor(private readonly outbox: OutboxService) {
    super();
  }

  async run(_: string[], options: OutputOptions): Promise<void> {
    const status = await this.outbox.status();
    printResult(options, status, `pending ${status.pending}, oldest ${status.oldest_pending_seconds} s`);
  }
}
