import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { ApiOperationDoc, DataOf } from '../../platform/http/api-docs.js';
import { AccountsService } from './accounts.service.js';
import { invalidField } from '../../platform/http/validation.js';
import { AccountId } from './api-key.guard.js';
import { CustomerApi } from './customer-api.js';

export class UpdateAccountDto {
  @ApiPropertyOptional({
    type: 'string', nullable: true, readOnly: true,
    description: 'Not settable: the billing customer is linked by the operator (accounts:create --billing-customer, accounts:link-billing). Sent, it is refused with 422 naming this field.',
  })
  @Allow()
  billing_customer_id?: unknown;
}

/** Why billing_customer_id is refused: whoever links a customer receives the bundles its paid invoices grant. */
export const BILLING_CUSTOMER_NOT_SETTABLE =
  'billing_customer_id is not settable through the API: your billing customer is linked by the operator; GET /v2/account shows the link';

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
    summary: 'Update your account',
    description: 'Nothing of the account is settable here yet. billing_customer_id is read-only: the operator links it (its paid invoices grant this account its bundles), so a body holding it is refused with 422 naming the field.',
    body: UpdateAccountDto,
    ok: DataOf(AccountSchema),
    errors: [[422, 'billing_customer_id is not settable (source.pointer /billing_customer_id)']],
  })
  async update(@AccountId() accountId: string, @Body() body: UpdateAccountDto) {
    if (body.billing_customer_id !== undefined) throw invalidField('/billing_customer_id', BILLING_CUSTOMER_NOT_SETTABLE);
    return { data: await this.accounts.getAccount(accountId) };
  }
}
