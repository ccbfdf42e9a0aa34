import { Command, Option } from 'nest-commander';
import { parseSinceOption, readCarrierLog } from '../../../platform/cli/carrier-log-options.js';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { printResult, requireOption, setFailed, type OutputOptions } from '../../../platform/cli/output.js';
import { CallsAudit, parseCarrierLog, type CallAuditReport } from '../calls-audit.js';

interface AuditOptions extends OutputOptions {
  carrierLog?: string;
  since?: Date;
  account?: string;
}

@Command({
  name: 'audit:calls',
  description: "Reads the carrier's call log (JSON lines) beside our calls: carrier-completed calls we have no row for, our ended calls it does not list, durations more than 5 s apart, calls it billed that we recorded unanswered; exit 1 on any finding",
})
export class AuditCallsCommand extends JsonCommand {
  constructor(private readonly audit: CallsAudit) {
    super();
  }

  @Option({ flags: '--carrier-log <file>', description: 'JSON lines: call_session_id or call_sid, status, start_time, end_time, duration_secs' })
  parseCarrierLog(value: string): string {
    return value;
  }

  @Option({ flags: '--since <time>', description: 'only the calls that ended at or after this ISO 8601 time, on both sides (default: our calls ended within 5 min of the log)' })
  parseSince(value: string): Date {
    return parseSinceOption(value);
  }

  @Option({ flags: '--account <id>', description: "only this account's calls (default: every account's)" })
  parseAccount(value: string): string {
    return value;
  }

  async run(_: string[], options: AuditOptions): Promise<void> {
    const file = requireOption(options, 'carrierLog');
    const text = await readCarrierLog(file);
    const { entries, invalidLines } = parseCarrierLog(text);
    const report = await this.audit.compare(entries, invalidLines, { since: options.since, accountId: options.account });
    printResult(options, report, human(report));
    if (!report.ok) setFailed();
  }
}

function human(report: CallAuditReport): string {
  const lines = [
    ...report.missing_here.map((m) => `MISSING HERE       ${m.carrier_call_id}  carrier says ${m.status}${m.start_time ? ` at ${m.start_time}` : ''}, we have no call`),
    ...report.missing_at_carrier.map((m) => `MISSING AT CARRIER ${m.call_id}  (${m.carrier_call_id}, ${m.status}) is not in the carrier's log`),
    ...report.duration_mismatches.map((m) => `DURATION           ${m.call_id}  (${m.carrier_call_id}) ours ${m.ours} s, carrier ${m.carrier} s`),
    ...report.unanswered_here.map((m) => `UNANSWERED HERE    ${m.call_id}  (${m.carrier_call_id}, ${m.status}) carrier billed ${m.carrier_duration} s, we recorded no answer`),
    ...(report.invalid_lines.length ? [`INVALID LINES      ${report.invalid_lines.join(', ')}`] : []),
  ];
  const summary = `${report.carrier_calls} carrier calls, ${report.our_calls} of ours compared: ${report.ok ? 'they agree' : `${lines.length} finding(s)`}`;
  return [...lines, summary].join('\n');
}
