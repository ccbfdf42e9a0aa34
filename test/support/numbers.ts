import type { PhoneNumberView } from '../../src/modules/numbers/phone-number.dto.js';
import { PhoneNumbers } from '../../src/modules/numbers/phone-numbers.service.js';
import type { TestApp } from './app.js';
import { runNode } from './run-node.js';

export type Carrier = 'telnyx' | 'twilio' | 'vonage';

/**
 * Gives an account a number the way the operator's `numbers:assign` does (the same service
 * method, in-process): what tests use now that `POST /v2/phone_numbers` answers 405.
 *
 *   const number = await assignNumber(t.app, customer.accountId, '+15550001111', 'telnyx');
 */
export function assignNumber(app: TestApp, accountId: string, phoneNumber: string, carrier: Carrier = 'telnyx'): Promise<PhoneNumberView> {
  return app.app.get(PhoneNumbers).assign(accountId, phoneNumber, carrier);
}

/** As assignNumber, through the operator's CLI (`numbers:assign --json`), for apps in other processes (test/support/cluster.ts). */
export async function assignNumberByCli(env: Record<string, string>, accountId: string, phoneNumber: string, carrier: Carrier = 'telnyx'): Promise<PhoneNumberView> {
  const run = await runNode(['dist/cli.js', 'numbers:assign', '--account', accountId, '--number', phoneNumber, '--carrier', carrier, '--json'], env);
  if (run.code !== 0) throw new Error(`numbers:assign ${phoneNumber} failed (${run.code}): ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout) as PhoneNumberView;
}
