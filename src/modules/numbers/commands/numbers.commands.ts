import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { printResult, requireOption, type OutputOptions } from '../../../platform/cli/output.js';
import { CARRIER_NAMES, type CarrierName } from '../../../carriers/normalized-event.js';
import { E164_MESSAGE, E164_PATTERN } from '../../../telephony/e164.js';
import { PhoneNumbers } from '../phone-numbers.service.js';

/** `--carrier telnyx|twilio|vonage`, or a usage error naming the flag. */
export function carrierOption(value: string): CarrierName {
  if (!(CARRIER_NAMES as readonly string[]).includes(value)) throw new Error(`--carrier must be one of ${CARRIER_NAMES.join(', ')}`);
  return value as CarrierName;
}

/** `--number <E.164>`, or a usage error naming the flag. */
export function numberOption(value: string): string {
  if (!E164_PATTERN.test(value)) throw new Error(`--number ${E164_MESSAGE}`);
  return value;
}

@Command({ name: 'numbers:assign', description: 'Assign a number the platform already holds at the carrier to an account (the operator is trusted)' })
export class AssignNumberCommand extends JsonCommand {
  constructor(private readonly numbers: PhoneNumbers) {
    super();
  }

  async run(_: string[], options: OutputOptions & { account: string; number: string; carrier: CarrierName }): Promise<void> {
    const number = await this.numbers.assign(requireOption(options, 'account'), requireOption(options, 'number'), requireOption(options, 'carrier'));
    printResult(options, number, `${number.phone_number} (${number.carrier}) is ${number.id} of ${options.account}`);
  }

  @Option({ flags: '--account <id>', description: 'account id (acct_...)' })
  parseAccount(value: string): string {
    return value;
  }

  @Option({ flags: '--number <E.164>', description: 'the number, E.164' })
  parseNumber(value: string): string {
    return numberOption(value);
  }

  @Option({ flags: '--carrier <carrier>', description: 'telnyx, twilio or vonage' })
  parseCarrier(value: string): CarrierName {
    return carrierOption(value);
  }
}
