import { Body, Controller, Get, Patch, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiPropertyOptional, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { Matches, ValidateIf } from 'class-validator';
import { AccountsService, BILLING_CUSTOMER_PATTERN } from './accounts.service.js';
import { AccountId, ApiKeyGuard } from './api-key.guard.js';

export class UpdateAccountDto {
  @ApiPropertyOptional({ example: 'cus_QxV4mN2bY7', nullable: true, description: "The billing provider's customer id (Stripe cus_…) whose paid invoices grant this account's bundles; null unlinks" })
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @Matches(BILLING_CUSTOMER_PATTERN, { message: 'billing_customer_id must be 1 to 255 of A-Z a-z 0-9 _ -' })
  billing_customer_id?: string | null;
}

/** The authenticated account itself. */
@ApiTags('Account')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'Missing or invalid API key' })
@UseGuards(ApiKeyGuard)
@Controller('v2/account')
export class AccountController {
  constructor(private readonly accounts: AccountsService) {}

  @Get()
  async get(@AccountId() accountId: string) {
    return { data: await this.accounts.getAccount(accountId) };
  }

  @Patch()
  @ApiOperation({ summary: 'Link the account to its billing customer', description: '409 when another account has that billing customer.' })
  async update(@AccountId() accountId: string, @Body() body: UpdateAccountDto) {
    if (body.billing_customer_id === undefined) return { data: await this.accounts.getAccount(accountId) };
    return { data: await this.accounts.setBillingCustomer(accountId, body.billing_customer_id) };
  }
}
