import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { newId, IdPrefix } from '../../platform/ids.js';
import { isUniqueViolation } from '../../platform/database/pg-errors.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { displayPrefix, generateApiKey, hashApiKey } from './api-key.js';
import type { ApiKeyView } from './api-key.dto.js';

export interface Principal {
  accountId: string;
  apiKeyId: string;
}

const KEY_COLUMNS = `id, 'api_key' AS record_type, prefix, created_at, revoked_at`;

export interface AccountView {
  id: string;
  record_type: 'account';
  name: string;
  billing_customer_id: string | null;
  created_at: string;
}

export const ACCOUNT_COLUMNS = `id, 'account' AS record_type, name, billing_customer_id, created_at`;

/** A billing provider's customer id as accounts carry it (Stripe: cus_…). */
export const BILLING_CUSTOMER_PATTERN = /^[A-Za-z0-9_-]{1,255}$/;

/** UNIQUE(billing_customer_id) refused it: one customer pays for one account. */
export function billingCustomerTaken(customerId: string): ConflictException {
  return new ConflictException({ code: 'billing_customer_taken', title: 'Billing customer already linked', detail: `billing customer ${customerId} belongs to another account` });
}

/** Accounts and their API keys. A key is shown once, at creation; only its hash is kept. */
@Injectable()
export class AccountsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly dataSource: DataSource,
  ) {}

  async createAccount(
    name: string,
    billingCustomerId?: string,
  ): Promise<{ account: { id: string; name: string; billing_customer_id?: string }; api_key: string; api_key_id: string }> {
    const accountId = newId(IdPrefix.Account);
    try {
      return await this.uow.run(async (tx) => {
        await exec(tx, `INSERT INTO accounts (id, name, billing_customer_id) VALUES ($1, $2, $3)`, [accountId, name, billingCustomerId ?? null]);
        const key = await this.insertKey(tx, accountId);
        const account = { id: accountId, name, ...(billingCustomerId !== undefined && { billing_customer_id: billingCustomerId }) };
        return { account, api_key: key.api_key, api_key_id: key.id };
      });
    } catch (err) {
      if (isUniqueViolation(err) && billingCustomerId !== undefined) throw billingCustomerTaken(billingCustomerId);
      throw err;
    }
  }

  async getAccount(accountId: string): Promise<AccountView> {
    const [row] = await queryRows(this.dataSource.manager, `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [accountId]);
    if (!row) throw new NotFoundException(`account ${accountId} not found`);
    return row;
  }

  /** The account a billing provider's customer pays for, if any. */
  async accountIdForBillingCustomer(tx: Tx, customerId: string): Promise<string | undefined> {
    const [row] = await queryRows<{ id: string }>(tx, `SELECT id FROM accounts WHERE billing_customer_id = $1`, [customerId]);
    return row?.id;
  }

  async createApiKey(accountId: string): Promise<{ api_key: string; id: string }> {
    return this.uow.run(async (tx) => {
      const { rows } = await exec(tx, `SELECT 1 FROM accounts WHERE id = $1`, [accountId]);
      if (rows.length === 0) throw new NotFoundException(`account ${accountId} not found`);
      return this.insertKey(tx, accountId);
    });
  }

  /** Revokes a key once; revoking it again reports it as already revoked. */
  async revokeApiKey(id: string): Promise<{ id: string; revoked: boolean }> {
    // revoked_at IS NULL: the first revocation's time is the one kept.
    const { affected } = await exec(this.dataSource.manager, `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [id]);
    if (affected === 1) return { id, revoked: true };
    const [row] = await queryRows(this.dataSource.manager, `SELECT 1 FROM api_keys WHERE id = $1`, [id]);
    if (!row) throw new NotFoundException(`api key ${id} not found`);
    return { id, revoked: false };
  }

  /** The account a presented key belongs to, or undefined for an unknown or revoked key. */
  async authenticate(presentedKey: string): Promise<Principal | undefined> {
    const [row] = await queryRows(this.dataSource.manager,
      `SELECT id, account_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
      [hashApiKey(presentedKey)],
    );
    return row ? { accountId: row.account_id, apiKeyId: row.id } : undefined;
  }

  async listApiKeys(accountId: string): Promise<ApiKeyView[]> {
    return queryRows(this.dataSource.manager, `SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = $1 ORDER BY id DESC`, [accountId]);
  }

  /** Scoped by account: another account's key is not found. */
  async getApiKey(accountId: string, id: string): Promise<ApiKeyView> {
    const [row] = await queryRows(this.dataSource.manager, `SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = $1 AND id = $2`, [accountId, id]);
    if (!row) throw new NotFoundException(`api key ${id} not found`);
    return row;
  }

  private async insertKey(tx: Tx, accountId: string) {
    const key = generateApiKey();
    const id = newId(IdPrefix.ApiKey);
    await exec(tx, `INSERT INTO api_keys (id, account_id, key_hash, prefix) VALUES ($1, $2, $3, $4)`, [
      id,
      accountId,
      hashApiKey(key),
      displayPrefix(key),
    ]);
    return { api_key: key, id };
  }
}
