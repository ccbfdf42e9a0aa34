import { Command, Option } from 'nest-commander';
import { parseMessageRecords } from '../../../carriers/message-records.js';
import { parseSinceOption, readCarrierLog } from '../../../platform/cli/carrier-log-options.js';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { printResult, requireOption, setFailed, type OutputOptions } from '../../../platform/cli/output.js';
import { MessagesAudit, type MessageAuditReport } from '../messages-audit.js';

interface AuditOptions extends OutputOptions {
  carrierLog?: string;
  since?: Date;
  account?: string;
}

@Command({
  name: 'audit:messages',
  description:
    "Reads the carrier's message records (JSON lines: Telnyx message detail records, Twilio Message resources, Vonage Reports API records) beside our messages: records we have no message for, messages the carrier took that it does not list, segment counts and final statuses that disagree; exit 1 on any finding",
})
export class AuditMessagesCommand extends JsonCommand {
  constructor(private readonly audit: MessagesAudit) {
    super();
  }

  @Option({ flags: '--carrier-log <file>', description: 'JSON lines, one carrier message record each, any mix of carriers (docs/billing.md lists the fields read)' })
  parseCarrierLog(value: string): string {
    return value;
  }

  @Option({ flags: '--since <time>', description: 'only messages created at or after this ISO 8601 time, on both sides (default: ours created within 5 min of the records)' })
  parseSince(value: string): Date {
    return parseSinceOption(value);
  }

  @Option({ flags: '--account <id>', description: "only this account's messages (default: every account's)" })
  parseAccount(value: string): string {
    return value;
  }

  async run(_: string[], options: AuditOptions): Promise<void> {
    const file = requireOption(options, 'carrierLog');
    const text = await readCarrierLog(file);
    const { records, invalidLines } = parseMessageRecords(text);
    const report = await this.audit.compare(records, invalidLines, { since: options.since, accountId: options.account });
    printResult(options, report, human(report));
    if (!report.ok) setFailed();
  }
}

function human(report: MessageAuditReport): string {
  const lines = [
    ...report.missing_here.map((m) => `MISSING HERE       ${m.carrier} ${m.carrier_message_id}${m.our_message_id ? ` (names ${m.our_message_id})` : ''}  ${m.direction}, carrier says ${m.carrier_status}, we have no message`),
    ...report.missing_at_carrier.map((m) => `MISSING AT CARRIER ${m.message_id}  (${m.carrier} ${m.carrier_message_id}, ${m.status}) is not in the carrier's records`),
    ...report.segment_mismatches.map((m) => `SEGMENTS           ${m.message_id}  (${m.carrier_message_id}) ours ${m.ours}, carrier ${m.carrier}`),
    ...report.status_mismatches.map((m) => `STATUS             ${m.message_id}  (${m.carrier_message_id}) ours ${m.ours}, carrier ${m.carrier} (${m.carrier_status})`),
    ...(report.invalid_lines.length ? [`INVALID LINES      ${report.invalid_lines.join(', ')}`] : []),
  ];
  const summary = `${report.carrier_records} carrier records, ${report.our_messages} of our messages compared: ${report.ok ? 'they agree' : `${lines.length} finding(s)`}`;
  return [...lines, summary].join('\n');
}
