import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { cliStreams, printResult, type OutputOptions } from '../../../platform/cli/output.js';
import type { ProcessResult } from '../carrier-event-processor.js';
import { CarrierEventsService, type CarrierEventRow } from '../carrier-events.service.js';

interface ListOptions extends OutputOptions {
  failed?: boolean;
  unhandled?: boolean;
  limit?: number;
}

@Command({
  name: 'carrier-events:list',
  description: 'Carrier events, newest first (--failed: processing failed; --unhandled: no handler for their kind yet)',
})
export class ListCarrierEventsCommand extends JsonCommand {
  constructor(private readonly events: CarrierEventsService) {
    super();
  }

  @Option({ flags: '--failed', description: 'only events whose processing failed for good' })
  parseFailed(): boolean {
    return true;
  }

  @Option({ flags: '--unhandled', description: 'only events kept unconsumed because no handler processes their kind yet' })
  parseUnhandled(): boolean {
    return true;
  }

  @Option({ flags: '--limit <n>', description: 'at most this many (default 50, max 1000)' })
  parseLimit(value: string): number {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error('--limit must be a whole number from 1 to 1000');
    return n;
  }

  async run(_: string[], options: ListOptions): Promise<void> {
    if (options.failed && options.unhandled) throw new Error('give at most one of --failed and --unhandled');
    const rows = await this.events.list({ failed: options.failed, unhandled: options.unhandled, limit: options.limit ?? 50 });
    const human = rows.length === 0 ? 'no carrier events' : rows.map((r) => `${r.id}  ${r.carrier}  ${r.event_type}  ${state(r)}`).join('\n');
    printResult(options, { data: rows }, human);
  }
}

function state(row: CarrierEventRow): string {
  if (row.processed_at) return 'processed';
  if (row.error) return `FAILED: ${row.error}`;
  return row.unhandled_since ? `waiting for a handler for ${row.kind}` : 'pending';
}

interface ReplayOptions extends OutputOptions {
  allFailed?: boolean;
  allUnhandled?: boolean;
}

/** Long replays report progress on stderr at most this often, so stdout stays one JSON document. */
const PROGRESS_EVERY_MS = 1000;

@Command({
  name: 'carrier-events:replay',
  arguments: '[id]',
  description: 'Re-run a carrier event (or --all-failed, --all-unhandled) through the same handlers; guards make it safe',
})
export class ReplayCarrierEventsCommand extends JsonCommand {
  constructor(private readonly events: CarrierEventsService) {
    super();
  }

  @Option({ flags: '--all-failed', description: 'every event whose processing failed' })
  parseAllFailed(): boolean {
    return true;
  }

  @Option({ flags: '--all-unhandled', description: 'every event waiting for a handler for its kind (those still without one keep waiting)' })
  parseAllUnhandled(): boolean {
    return true;
  }

  async run([id]: string[], options: ReplayOptions): Promise<void> {
    if ([Boolean(id), options.allFailed, options.allUnhandled].filter(Boolean).length !== 1) {
      throw new Error('give exactly one of an event id, --all-failed and --all-unhandled');
    }
    let last = 0;
    const progress = (done: number, total: number) => {
      if (Date.now() - last < PROGRESS_EVERY_MS && done < total) return;
      last = Date.now();
      cliStreams().err(`replayed ${done}/${total}\n`);
    };
    let results: ProcessResult[];
    if (id) results = [await this.events.replay(id)];
    else if (options.allFailed) results = await this.events.replayAllFailed(progress);
    else results = await this.events.replayAllUnhandled(progress);
    const counts: Record<string, number> = {};
    for (const r of results) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
    const human = results.length === 0
      ? 'nothing to replay'
      : results.map((r) => `${r.id}  ${r.outcome}${r.error ? `: ${r.error}` : ''}`).join('\n');
    // The shape docs/operations.md documents, like every other single-document command: no `data` wrapper.
    printResult(options, { replayed: results.length, outcomes: counts, results }, human);
  }
}
