import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Matches, ValidateIf } from 'class-validator';
import { ApiOperationDoc, DataOf } from '../../platform/http/api-docs.js';
import { AccountsService, BILLING_CUSTOMER_PATTERN } from './accounts.service.js';
import { AccountId } from './api-key.guard.js';
import { CustomerApi } from './customer-api.js';

export class UpdateAccountDto {
  @ApiPropertyOptional({ type: 'string', example: 'cus_QxV4mN2bY7', nullable: true, pattern: BILLING_CUSTOMER_PATTERN.source, description: "The billing provider's customer id (Stripe cus_…) whose paid invoices grant this account's bundles; null unlinks" })
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @Matches(BILLING_CUSTOMER_PATTERN, { message: 'billing_customer_id must be 1 to 255 of A-Z a-z 0-9 _ -' })
  billing_customer_id?: string | null;
}

/** The account as the REST API shows it. */
@ApiSchema({ name: 'Account' })
export class AccountSchema {
  @ApiProperty({ example: 'acct_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['account'] }) record_type!: 'account';
  @ApiProperty({ example: 'Acme Ltd' }) name!: string;
  @ApiProperty({ type: 'string', nullable: true, example: 'cus_QxV4mN2bY7', description: "The billing provider's customer paying for this account" }) billing_customer_id!: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
}

/** The authenticated account itself. */
@CustomerApi('Account')
@Controller('v2/account')
export class AccountController {
  constructor(private readonly accounts: AccountsService) {}

  @Get()
  @ApiOperationDoc({ summary: 'Get your account', ok: DataOf(AccountSchema) })
  async get(@AccountId() accountId: string) {
    return { data: await this.accounts.getAccount(accountId) };
  }

  @Patch()
  @ApiOperationDoc({
    summary: 'Link the account to its billing customer',
    description: 'Paid invoices of that customer grant this account its prepaid bundles (POST /webhooks/billing/stripe).',
    body: UpdateAccountDto,
    ok: DataOf(AccountSchema),
    errors: [[409, 'Another account has this billing customer (code billing_customer_taken)']],
  })
  async update(@AccountId() accountId: string, @Body() body: UpdateAccountDto) {
    if (body.billing_customer_id === undefined) return { data: await this.accounts.getAccount(accountId) };
    return { data: await this.accounts.setBillingCustomer(accountId, body.billing_customer_id) };
  }
}
