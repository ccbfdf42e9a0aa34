import { userInfo } from 'node:os';
import { Command, Option } from 'nest-commander';
import { JsonCommand } from '../../../platform/cli/json-command.js';
import { printResult, requireOption, type OutputOptions } from '../../../platform/cli/output.js';
import { AccountsService, BILLING_CUSTOMER_PATTERN } from '../accounts.service.js';
import { BillingLinks } from '../billing-links.js';

/** The --billing-customer value of accounts:create and accounts:link-billing. */
function billingCustomerOption(value: string): string {
  if (!BILLING_CUSTOMER_PATTERN.test(value)) throw new Error('--billing-customer must be 1 to 255 of A-Z a-z 0-9 _ -');
  return value;
}

@Command({ name: 'accounts:create', description: 'Create an account and its first API key (shown once)' })
export class CreateAccountCommand extends JsonCommand {
  constructor(private readonly accounts: AccountsService) {
    super();
  }

  async run(_: string[], options: OutputOptions & { name: string; billingCustomer?: string }): Promise<void> {
    const created = await this.accounts.createAccount(requireOption(options, 'name'), options.billingCustomer);
    printResult(options, { account: created.account, api_key: created.api_key, api_key_id: created.api_key_id },
      `account ${created.account.id}\napi key (shown once): ${created.api_key}`);
  }

  @Option({ flags: '--name <name>', description: 'account name' })
  parseName(value: string): string {
    return value;
  }

  @Option({ flags: '--billing-customer <id>', description: "billing provider's customer id (Stripe cus_...) whose paid invoices grant bundles" })
  parseBillingCustomer(value: string): string {
    return billingCustomerOption(value);
  }
}

/**
 * The operator's relink (contract, "Entitlements"): an account never sets its own billing
 * customer. Each run leaves an audit row (billing_link_audit) and prints it.
 */
@Command({ name: 'accounts:link-billing', description: "Link an account to its billing customer (or --unlink); leaves an audit line" })
export class LinkBillingCustomerCommand extends JsonCommand {
  constructor(private readonly links: BillingLinks) {
    super();
  }

  async run(_: string[], options: OutputOptions & { account: string; billingCustomer?: string; unlink?: boolean; by?: string }): Promise<void> {
    if ((options.billingCustomer === undefined) === !options.unlink) throw new Error('give exactly one of --billing-customer <id> and --unlink');
    const { account, audit } = await this.links.link(requireOption(options, 'account'), options.billingCustomer ?? null, options.by ?? userInfo().username);
    const at = new Date(audit.changed_at).toISOString();
    printResult(options, { account, audit },
      `audit ${audit.id}: ${at} ${audit.changed_by} linked account ${account.id} to billing customer ${audit.customer_id ?? '(none)'} (was ${audit.previous_customer_id ?? '(none)'})`);
  }

  @Option({ flags: '--account <id>', description: 'account id (acct_...)' })
  parseAccount(value: string): string {
    return value;
  }

  @Option({ flags: '--billing-customer <id>', description: "billing provider's customer id (Stripe cus_...) whose paid invoices grant bundles" })
  parseBillingCustomer(value: string): string {
    return billingCustomerOption(value);
  }

  @Option({ flags: '--unlink', description: 'remove the link instead' })
  parseUnlink(): boolean {
    return true;
  }

  @Option({ flags: '--by <operator>', description: 'who is making the change, for the audit line (default: the OS user)' })
  parseBy(value: string): string {
    return value;
  }
}

@Command({ name: 'api-keys:create', description: 'Create another API key for an account (shown once)' })
export class CreateApiKeyCommand extends JsonCommand {
  constructor(private readonly accounts: AccountsService) {
    super();
  }

  async run(_: string[], options: OutputOptions & { account: string }): Promise<void> {
    const key = await this.accounts.createApiKey(requireOption(options, 'account'));
    printResult(options, key, `api key ${key.id} (shown once): ${key.api_key}`);
  }

  @Option({ flags: '--account <id>', description: 'account id (acct_...)' })
  parseAccount(value: string): string {
    return value;
  }
}

@Command({ name: 'api-keys:revoke', arguments: '<id>', description: 'Revoke an API key at once' })
export class RevokeApiKeyCommand extends JsonCommand {
  constructor(private readonly accounts: AccountsService) {
    super();
  }

  async run([id]: string[], options: OutputOptions): Promise<void> {
    const result = await this.accounts.revokeApiKey(id);
    printResult(options, result, result.revoked ? `revoked ${id}` : `${id} was already revoked`);
  }
}
