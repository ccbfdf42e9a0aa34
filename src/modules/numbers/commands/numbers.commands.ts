import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { printResult, requireOption, type OutputOptions } from '../../../platform/cli/output.js';
import { CARRIER_NAMES, type CarrierName } from '../../../carriers/carrier-name.js';
import { E164_MESSAGE, E164_PATTERN } from '../../../telephony/e164.js';
import { PhoneNumbers } from '../phone-numbers.service.js';
import { NumberProviders } from '../../../carriers/number-providers.js';
import { parseIdempotencyKey } from '../../../platform/idempotency/idempotency-keys.js';
import { COUNTRY_PATTERN } from '../number-order.dto.js';
import { NumberOrders } from '../number-orders.service.js';
import { NumberReleases } from '../number-releases.js';
import { NumberRentals, PERIOD_PATTERN } from '../number-rentals.js';
import { NumberSearchService, parseSearch } from '../number-search.js';

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

@Command({ name: 'billing:run-rentals', description: 'Bill the monthly rental of every number held in a calendar month (UTC): once per number and month, however often it runs' })
export class RunRentalsCommand extends JsonCommand {
  constructor(private readonly rentals: NumberRentals) {
    super();
  }

  async run(_: string[], options: OutputOptions & { period: string }): Promise<void> {
    const result = await this.rentals.run(requireOption(options, 'period'));
    printResult(options, result, `${result.period}: ${result.numbers} numbers held, ${result.billed} rentals billed by this run`);
  }

  @Option({ flags: '--period <YYYY-MM>', description: 'the calendar month' })
  parsePeriod(value: string): string {
    if (!PERIOD_PATTERN.test(value)) throw new Error('--period must be a calendar month YYYY-MM');
    return value;
  }
}

@Command({ name: 'numbers:search', description: 'Search numbers a carrier offers (as GET /v2/available_phone_numbers)' })
export class SearchNumbersCommand extends JsonCommand {
  constructor(private readonly searching: NumberSearchService) {
    super();
  }

  async run(_: string[], options: OutputOptions & { carrier?: string; country?: string; areaCode?: string; contains?: string; features?: string; limit?: string }): Promise<void> {
    const query = parseSearch({ carrier: options.carrier, country: options.country, area_code: options.areaCode, contains: options.contains, features: options.features, limit: options.limit });
    const found = await this.searching.search(query);
    printResult(options, { data: found }, found.map((n) => `${n.phone_number} ${n.carrier} ${n.features.join(',')} ${n.monthly_price_micros} micro-${n.currency}/month`).join('\n') || 'no numbers found');
  }

  @Option({ flags: '--carrier <carrier>', description: 'telnyx (default), twilio or vonage' })
  parseCarrier(value: string): string {
    return value;
  }

  @Option({ flags: '--country <code>', description: 'ISO 3166-1 alpha-2, default US' })
  parseCountry(value: string): string {
    return value;
  }

  @Option({ flags: '--area-code <digits>', description: 'area code' })
  parseAreaCode(value: string): string {
    return value;
  }

  @Option({ flags: '--contains <digits>', description: 'digits the number contains' })
  parseContains(value: string): string {
    return value;
  }

  @Option({ flags: '--features <list>', description: 'sms,voice' })
  parseFeatures(value: string): string {
    return value;
  }

  @Option({ flags: '--limit <n>', description: 'at most this many (1 to 50, default 10)' })
  parseLimit(value: string): string {
    return value;
  }
}

@Command({ name: 'numbers:order', description: "Order numbers for an account (as POST /v2/phone_number_orders); prints the order, pending until the carrier settles it" })
export class OrderNumbersCommand extends JsonCommand {
  constructor(private readonly orders: NumberOrders) {
    super();
  }

  async run(_: string[], options: OutputOptions & { account: string; carrier: CarrierName; number: string[]; country?: string; idempotencyKey?: string }): Promise<void> {
    const placed = await this.orders.place(
      requireOption(options, 'account'),
      { carrier: requireOption(options, 'carrier'), phone_numbers: requireOption(options, 'number'), country: options.country },
      options.idempotencyKey,
    );
    const order = (placed.body as { data: { id: string; status: string } }).data;
    printResult(options, placed.body, `order ${order.id}: ${order.status}${placed.replayed ? ' (replayed)' : ''}`);
  }

  @Option({ flags: '--account <id>', description: 'account id (acct_...)' })
  parseAccount(value: string): string {
    return value;
  }

  @Option({ flags: '--carrier <carrier>', description: 'telnyx, twilio or vonage' })
  parseCarrier(value: string): CarrierName {
    return carrierOption(value);
  }

  @Option({ flags: '--number <E.164>', description: 'a number to order (repeat for more)' })
  parseNumber(value: string, previous: string[] = []): string[] {
    return [...previous, numberOption(value)];
  }

  @Option({ flags: '--country <code>', description: 'ISO 3166-1 alpha-2, default US' })
  parseCountry(value: string): string {
    if (!COUNTRY_PATTERN.test(value)) throw new Error('--country must be an ISO 3166-1 alpha-2 code such as US');
    return value;
  }

  @Option({ flags: '--idempotency-key <key>', description: "the API's Idempotency-Key rules: the same key again prints the same order" })
  parseIdempotencyKey(value: string): string {
    return parseIdempotencyKey(value)!;
  }
}

@Command({ name: 'numbers:release', arguments: '<id>', description: "Release an account's number (as DELETE /v2/phone_numbers/:id)" })
export class ReleaseNumberCommand extends JsonCommand {
  constructor(private readonly releases: NumberReleases) {
    super();
  }

  async run([id]: string[], options: OutputOptions & { account: string }): Promise<void> {
    const number = await this.releases.request(requireOption(options, 'account'), id);
    printResult(options, number, `${number.phone_number}: ${number.status}`);
  }

  @Option({ flags: '--account <id>', description: 'account id (acct_...)' })
  parseAccount(value: string): string {
    return value;
  }
}

@Command({ name: 'numbers:release-retry', arguments: '<id>', description: 'Release a number stuck releasing (its carrier release failed; see verify numbers.release_failing) again now' })
export class RetryReleaseCommand extends JsonCommand {
  constructor(private readonly releases: NumberReleases) {
    super();
  }

  async run([id]: string[], options: OutputOptions): Promise<void> {
    const number = await this.releases.retry(id);
    if (!number) throw new Error(`${id} is not a releasing number`);
    printResult(options, { data: number }, `${number.phone_number} (${number.carrier}): release queued again after ${number.release_attempts} failed attempts${number.release_error ? ` (last: ${number.release_error})` : ''}`);
  }
}

@Command({ name: 'numbers:import', description: "List the carrier account's numbers that no account holds yet (assign them with numbers:assign)" })
export class ImportNumbersCommand extends JsonCommand {
  constructor(
    private readonly providers: NumberProviders,
    private readonly numbers: PhoneNumbers,
  ) {
    super();
  }

  async run(_: string[], options: OutputOptions & { carrier: CarrierName }): Promise<void> {
    const carrier = requireOption(options, 'carrier');
    const held = await this.providers.for(carrier).listHeld();
    const unassigned = await this.numbers.unassigned(held.map((n) => n.phoneNumber));
    printResult(options, { data: unassigned.map((phone_number) => ({ phone_number, carrier })) }, unassigned.join('\n') || `every ${carrier} number is assigned`);
  }

  @Option({ flags: '--carrier <carrier>', description: 'telnyx, twilio or vonage' })
  parseCarrier(value: string): CarrierName {
    return carrierOption(value);
  }
}
