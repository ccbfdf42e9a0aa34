import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccountsService } from '../../../src/modules/accounts/accounts.service.js';
import { IdPrefix, newId } from '../../../src/platform/ids.js';
import { TEST_REDIS_URL } from '../../support/env.js';
import { runCliHere } from '../../support/run-cli.js';
import { withTestApp } from '../../support/with-test-app.js';

/** Ids of ours (their time is their partition: migration 0046), readable after it: msg_<time>audit_<name>. */
const T = newId(IdPrefix.Message).slice(4, 14);

describe("audit:messages --carrier-log: our messages beside the carrier's message records", () => {
  const t = withTestApp({ http: false });

  /** A message of ours as the transitions leave it (the audit reads rows only). */
  async function message(accountId: string, id: string, m: { carrier: string; carrierId: string; status: string; segments: number; direction?: string }): Promise<void> {
    await t.db.pool.query(
      `INSERT INTO messages (id, account_id, direction, from_number, to_number, text, status, segments, encoding, carrier, carrier_message_id)
       VALUES ($1, $2, $3, '+15550460001', '+15550460002', 'audit me', $4, $5, 'GSM-7', $6, $7)`,
      [id, accountId, m.direction ?? 'outbound', m.status, m.segments, m.carrier, m.carrierId],
    );
  }

  it('finds a record missing here, a message missing at the carrier, a segment and a status mismatch, each once with both ids; exit 1', async () => {
    const { account } = await t.app.app.get(AccountsService).createAccount('audit-messages');
    const now = new Date().toISOString();
    await message(account.id, `msg_${T}audit_match`, { carrier: 'telnyx', carrierId: 'tx-1', status: 'delivered', segments: 1 });
    await message(account.id, `msg_${T}audit_segments`, { carrier: 'telnyx', carrierId: 'tx-2', status: 'sent', segments: 2 });
    await message(account.id, `msg_${T}audit_status`, { carrier: 'twilio', carrierId: 'SM00000000000000000000000000000003', status: 'delivered', segments: 1 });
    await message(account.id, `msg_${T}audit_inbound`, { carrier: 'twilio', carrierId: 'SM00000000000000000000000000000004', status: 'received', segments: 1, direction: 'inbound' });
    await message(account.id, `msg_${T}audit_vonage`, { carrier: 'vonage', carrierId: 'aaaaaaaa-0000-0000-0000-000000000005', status: 'delivered', segments: 1 });
    await message(account.id, `msg_${T}audit_unlisted`, { carrier: 'vonage', carrierId: 'aaaaaaaa-0000-0000-0000-000000000006', status: 'sent', segments: 1 });
    const log = [
      // Telnyx message detail records
      { record_type: 'message_detail_record', uuid: 'tx-1', direction: 'outbound', status: 'delivered', parts: 1, cli: '+15550460001', cld: '+15550460002', created_at: now },
      { record_type: 'message_detail_record', uuid: 'tx-2', direction: 'outbound', status: 'dlr_unconfirmed', parts: 3, cli: '+15550460001', cld: '+15550460002', created_at: now },
      // Twilio Message resources (the list's messages[]): one the carrier failed, one inbound, one we never saw (listed twice)
      { sid: 'SM00000000000000000000000000000003', direction: 'outbound-api', status: 'undelivered', num_segments: '1', date_created: now, error_code: 30003 },
      { sid: 'SM00000000000000000000000000000004', direction: 'inbound', status: 'received', num_segments: '1', date_created: now },
      { sid: 'SM00000000000000000000000000000009', direction: 'outbound-api', status: 'delivered', num_segments: '1', date_created: now },
      { sid: 'SM00000000000000000000000000000009', direction: 'outbound-api', status: 'delivered', num_segments: '1', date_created: now },
      // Vonage Reports API record, named by our client_ref
      { message_id: 'aaaaaaaa-0000-0000-0000-000000000005', client_ref: `msg_${T}audit_vonage`, direction: 'outbound', status: 'delivered', date_received: now, total_price: '0.0066' },
    ].map((line) => JSON.stringify(line));
    const dir = mkdtempSync(join(tmpdir(), 'audit-messages-'));
    const file = join(dir, 'messages.jsonl');
    writeFileSync(file, [...log, '{"neither": "a record"}', 'not json', ''].join('\n'));
    const env = { DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'error' };
    const run = await runCliHere(['audit:messages', '--carrier-log', file, '--json'], env);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: false,
      carrier_records: 6,
      our_messages: 6,
      missing_here: [{ carrier: 'twilio', carrier_message_id: 'SM00000000000000000000000000000009', our_message_id: null, direction: 'outbound', carrier_status: 'delivered' }],
      missing_at_carrier: [{ message_id: `msg_${T}audit_unlisted`, carrier: 'vonage', carrier_message_id: 'aaaaaaaa-0000-0000-0000-000000000006', status: 'sent' }],
      segment_mismatches: [{ message_id: `msg_${T}audit_segments`, carrier_message_id: 'tx-2', ours: 2, carrier: 3 }],
      status_mismatches: [{ message_id: `msg_${T}audit_status`, carrier_message_id: 'SM00000000000000000000000000000003', ours: 'delivered', carrier: 'failed', carrier_status: 'undelivered' }],
      invalid_lines: [8, 9],
    });

    // Records that agree with every message of ours: exit 0; the human form says so.
    const agreeing = [
      log[0], log[3], log[6],
      JSON.stringify({ record_type: 'message_detail_record', uuid: 'tx-2', direction: 'outbound', status: 'sent', parts: 2, created_at: now }),
      JSON.stringify({ sid: 'SM00000000000000000000000000000003', direction: 'outbound-api', status: 'delivered', num_segments: '1', date_created: now }),
      JSON.stringify({ message_id: 'aaaaaaaa-0000-0000-0000-000000000006', client_ref: `msg_${T}audit_unlisted`, direction: 'outbound', status: 'submitted', date_received: now }),
    ];
    writeFileSync(file, agreeing.join('\n'));
    const clean = await runCliHere(['audit:messages', '--carrier-log', file, '--account', account.id], env);
    expect(clean.stdout).toContain('they agree');
    expect(clean.code).toBe(0);
  });
});
