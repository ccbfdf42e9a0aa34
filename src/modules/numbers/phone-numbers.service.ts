import { ConflictException, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { newId, IdPrefix } from '../../platform/ids.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import type { CarrierName } from '../../carriers/normalized-event.js';
import type { PhoneNumberView } from './phone-number.dto.js';

const COLUMNS = `id, 'phone_number' AS record_type, phone_number, carrier, created_at`;

/** Which account owns which number, and through which carrier it sends. */
@Injectable()
export class PhoneNumbers {
  constructor(private readonly dataSource: DataSource) {}

  /** Claims a number for an account; the UNIQUE(phone_number) index decides between claimants. */
  async claim(accountId: string, phoneNumber: string, carrier: CarrierName): Promise<PhoneNumberView> {
    const { rows } = await exec<PhoneNumberView & { account_id: string }>(
      this.dataSource.manager,
      // ON CONFLICT DO NOTHING: an existing claim is never overwritten; RETURNING is empty then.
      `INSERT INTO phone_numbers (id, account_id, phone_number, carrier) VALUES ($1, $2, $3, $4)
       ON CONFLICT (phone_number) DO NOTHING
       RETURNING ${COLUMNS}`,
      [newId(IdPrefix.PhoneNumber), accountId, phoneNumber, carrier],
    );
    if (rows.length === 1) return rows[0];
    throw new ConflictException({ code: 'phone_number_taken', title: 'Phone number already registered', detail: `${phoneNumber} is already registered` });
  }

  async list(accountId: string, page: PageRequest): Promise<PhoneNumberView[]> {
    return this.dataSource.query(
      `SELECT ${COLUMNS} FROM phone_numbers WHERE account_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [accountId, page.after ?? null, page.size + 1],
    );
  }

  /**
   * The account's own number, or undefined (sending from it is then refused). Read in the
   * caller's transaction: a second pooled connection per transaction can exhaust the pool.
   */
  async findOwned(tx: Tx, accountId: string, phoneNumber: string): Promise<PhoneNumberView | undefined> {
    const [row] = await tx.query(`SELECT ${COLUMNS} FROM phone_numbers WHERE account_id = $1 AND phone_number = $2`, [accountId, phoneNumber]);
    return row;
  }

  /** Who receives messages to this number (inbound routing), if anyone. */
  async findOwner(tx: Tx, phoneNumber: string): Promise<{ accountId: string; carrier: CarrierName } | undefined> {
    const [row] = await tx.query(`SELECT account_id, carrier FROM phone_numbers WHERE phone_number = $1`, [phoneNumber]);
    return row ? { accountId: row.account_id, carrier: row.carrier } : undefined;
  }
}
