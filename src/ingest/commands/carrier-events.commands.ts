import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../cli/json-command.js';
import { printResult, type OutputOptions } from '../../cli/output.js';
import type { ProcessResult } from '../carrier-event-processor.js';
import { CarrierEventsService } from '../carrier-events.service.js';

interface ListOptions extends OutputOptions {
  failed?: boolean;
  limit?: number;
}

@Command({ name: 'carrier-events:list', description: 'Carrier events, newest first (--failed: those whose processing failed)' })
export class ListCarrierEventsCommand extends JsonCommand {
  constructor(private readonly events: CarrierEventsService) {
    super();
  }

  @Option({ flags: '--failed', description: 'only events whose processing failed for good' })
  parseFailed(): boolean {
    return true;
  }

  @Option({ flags: '--limit <n>', description: 'at most this many (default 50, max 1000)' })
  parseLimit(value: string): number {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error('--limit must be a whole number from 1 to 1000');
    return n;
  }

  async run(_: string[], options: ListOptions): Promise<void> {
    const rows = await this.events.list({ failed: options.failed ?? false, limit: options.limit ?? 50 });
    const human = rows.length === 0
      ? 'no carrier events'
      : rows.map((r) => `${r.id}  ${r.carrier}  ${r.event_type}  ${r.processed_at ? 'processed' : r.error ? `FAILED: ${r.error}` : 'pending'}`).join('\n');
    printResult(options, { data: rows }, human);
  }
}

interface ReplayOptions extends OutputOptions {
  allFailed?: boolean;
}

/** Long replays report progress on stderr at most this often, so stdout stays one JSON document. */
const PROGRESS_EVERY_MS = 1000;

@Command({
  name: 'carrier-events:replay',
  arguments: '[id]',
  description: 'Re-run a carrier event (or --all-failed) through the same handlers; guards make it safe',
})
export class ReplayCarrierEventsCommand extends JsonCommand {
  constructor(private readonly events: CarrierEventsService) {
    super();
  }

  @Option({ flags: '--all-failed', description: 'every event whose processing failed' })
  parseAllFailed(): boolean {
    return true;
  }

  async run([id]: string[], options: ReplayOptions): Promise<void> {
    if (!id === !options.allFailed) throw new Error('give either an event id or --all-failed');
    let results: ProcessResult[];
    if (id) {
      results = [await this.events.replay(id)];
    } else {
      let last = 0;
      results = await this.events.replayAllFailed((done, total) => {
        if (Date.now() - last < PROGRESS_EVERY_MS && done < total) return;
        last = Date.now();
        process.stderr.write(`replayed ${done}/${total}\n`);
      });
    }
    const counts: Record<string, number> = {};
    for (const r of results) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
    const human = results.length === 0
      ? 'nothing to replay'
      : results.map((r) => `${r.id}  ${r.outcome}${r.error ? `: ${r.error}` : ''}`).join('\n');
    printResult(options, { data: { replayed: results.length, outcomes: counts, results } }, human);
  }
}
