import { DataSource } from 'typeorm';
import type { PhoneNumberView } from '../../src/modules/numbers/phone-number.dto.js';
import { PhoneNumbers } from '../../src/modules/numbers/phone-numbers.service.js';
import { AppConfig } from '../../src/platform/config/app-config.js';
import type { TestApp } from './app.js';

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

/**
 * As assignNumber for an app in other processes (test/support/cluster.ts): the same service
 * method on a connection of the test's own, without booting a CLI process per number.
 */
export async function assignNumbersIn(databaseUrl: string, accountId: string, phoneNumbers: string[], carrier: Carrier = 'telnyx'): Promise<PhoneNumberView[]> {
  const dataSource = await new DataSource({ type: 'postgres', url: databaseUrl, entities: [] }).initialize();
  try {
    // assign only: its answer's rate (MESSAGE_SEND_RATE_DEFAULT unset here) is not used
    const numbers = new PhoneNumbers(dataSource, new AppConfig());
    const assigned: PhoneNumberView[] = [];
    for (const phoneNumber of phoneNumbers) assigned.push(await numbers.assign(accountId, phoneNumber, carrier));
    return assigned;
  } finally {
    await dataSource.destroy();
  }
}
