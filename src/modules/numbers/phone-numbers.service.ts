import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { isForeignKeyViolation } from '../../platform/database/pg-errors.js';
import { DataSource } from 'typeorm';
import { newId, IdPrefix } from '../../platform/ids.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import type { CarrierName } from '../../carriers/carrier-name.js';
import type { VoiceSettings } from '../sequential-ring/ring-plan.js';
import type { PhoneNumberView } from './phone-number.dto.js';
import { isoTimestampSql, type CteStatement } from '../../platform/database/cte-statement.js';
import { rateDefaultSql, sendRateSql } from './send-rates.js';
import { AppConfig } from '../../platform/config/app-config.js';

/**
 * The SELECT / RETURNING list that yields a PhoneNumberView. Its rate is the effective one: the
 * number's own, else `rateDefault` (MESSAGE_SEND_RATE_DEFAULT) when the operator set one, else the
 * default for its carrier and type: the rate dispatch paces it by.
 */
export function numberColumns(rateDefault: number | undefined): string {
  return `id, 'phone_number' AS record_type, phone_number, carrier, status, voice,
  jsonb_build_object('send_rate_per_second', ${sendRateSql('phone_numbers', rateDefaultSql(rateDefault))}::float8,
                     'send_rate_source', CASE WHEN phone_numbers.send_rate_per_second IS NULL THEN 'default' ELSE 'number' END,
                     'paused_until', CASE WHEN phone_numbers.send_paused_until > now() THEN ${isoTimestampSql('phone_numbers.send_paused_until')} END) AS messaging,
  created_at`;
}

/** PATCH /v2/phone_numbers/:id: each setting given is replaced (null clears it), the others are kept. */
export interface NumberSettingsChange {
  voice?: VoiceSettings | null;
  sendRatePerSecond?: number | null;
}

/** A number that routes (calls, messages, sends): only an active one. A releasing number stops at once. */
const ROUTES = `status = 'active'`;
/** The statuses that hold a number (the partial unique index phone_numbers_held_idx). */
export const HELD = `status IN ('ordering', 'active', 'releasing')`;

/** Who takes calls to a number, and how. */
export interface VoiceRoute {
  accountId: string;
  carrier: CarrierName;
  voice: VoiceSettings | null;
}

/** Which account owns which number, and through which carrier it sends. */
/** PhoneNumbers.ownersCte bound to a statement and a CTE name: (rows, numberColumn) → the owners' CTE. */
export type OwnersOf = (rows: string, numberColumn: string) => string;

/** A number's route as its row holds it (findVoiceRoute, voiceRoutes). */
interface VoiceRouteRow {
  account_id: string;
  carrier: CarrierName;
  voice: VoiceSettings | null;
}

const toVoiceRoute = (row: VoiceRouteRow): VoiceRoute => ({ accountId: row.account_id, carrier: row.carrier, voice: row.voice });

@Injectable()
export class PhoneNumbers {
  /** numberColumns with this process's MESSAGE_SEND_RATE_DEFAULT. */
  private readonly columns: string;

  constructor(
    private readonly dataSource: DataSource,
    config: AppConfig,
  ) {
    this.columns = numberColumns(config.MESSAGE_SEND_RATE_DEFAULT);
  }

  /**
   * Assigns a number the platform already holds at the carrier to an account (the operator's
   * numbers:assign; tests use it too). Assigning it again to the same account returns it.
   */
  async assign(accountId: string, phoneNumber: string, carrier: CarrierName): Promise<PhoneNumberView> {
    let rows: PhoneNumberView[];
    try {
      ({ rows } = await exec<PhoneNumberView>(
        this.dataSource.manager,
        // The held-number index decides: a new row, or the same account's active row locked and
        // returned unchanged; another holder (or another carrier) makes RETURNING empty.
        `INSERT INTO phone_numbers (id, account_id, phone_number, carrier, status, activated_at) VALUES ($1, $2, $3, $4, 'active', now())
         ON CONFLICT (phone_number) WHERE ${HELD} DO UPDATE SET carrier = phone_numbers.carrier
           WHERE phone_numbers.account_id = EXCLUDED.account_id AND phone_numbers.carrier = EXCLUDED.carrier AND phone_numbers.${ROUTES}
         RETURNING ${this.columns}`,
        [newId(IdPrefix.PhoneNumber), accountId, phoneNumber, carrier],
      ));
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: `no account ${accountId}` });
      throw err;
    }
    if (rows.length === 1) return rows[0];
    throw new ConflictException({ code: 'phone_number_taken', title: 'Phone number held', detail: `${phoneNumber} is held by another account (or on another carrier)` });
  }

  /** Which of these numbers no account holds. */
  async unassigned(phoneNumbers: string[]): Promise<string[]> {
    const rows = await queryRows<{ n: string }>(
      this.dataSource.manager,
      `SELECT n FROM unnest($1::text[]) AS n WHERE NOT EXISTS (SELECT FROM phone_numbers p WHERE p.phone_number = n AND p.${HELD}) ORDER BY n`,
      [phoneNumbers],
    );
    return rows.map((r) => r.n);
  }

  /** Sets (or with null clears) the settings given; undefined when the account has no such number. */
  async update(accountId: string, id: string, change: NumberSettingsChange): Promise<PhoneNumberView | undefined> {
    // account_id in the WHERE: another account's number is not found, never changed. A setting
    // not given keeps its value ($4/$6 false).
    const { rows } = await exec<PhoneNumberView>(
      this.dataSource.manager,
      `UPDATE phone_numbers SET voice = CASE WHEN $4 THEN $3::jsonb ELSE voice END,
              send_rate_per_second = CASE WHEN $6 THEN $5::numeric ELSE send_rate_per_second END
        WHERE id = $1 AND account_id = $2 AND ${HELD} RETURNING ${this.columns}`,
      [
        id, accountId,
        change.voice ? JSON.stringify(change.voice) : null, change.voice !== undefined,
        change.sendRatePerSecond ?? null, change.sendRatePerSecond !== undefined,
      ],
    );
    return rows[0];
  }

  /** The number's view in `tx` (whoever holds it): what a release answers and announces. */
  async viewIn(tx: Tx, id: string): Promise<PhoneNumberView> {
    const [row] = await queryRows<PhoneNumberView>(tx, `SELECT ${this.columns} FROM phone_numbers WHERE id = $1`, [id]);
    return row;
  }

  async get(accountId: string, id: string): Promise<PhoneNumberView | undefined> {
    const [row] = await queryRows<PhoneNumberView>(this.dataSource.manager, `SELECT ${this.columns} FROM phone_numbers WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return row;
  }

  async list(accountId: string, page: PageRequest): Promise<PhoneNumberView[]> {
    return queryRows<PhoneNumberView>(
      this.dataSource.manager,
      `SELECT ${this.columns} FROM phone_numbers WHERE account_id = $1 AND ${HELD} AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [accountId, page.after ?? null, page.size + 1],
    );
  }

  /**
   * The account's own number, or undefined (sending from it is then refused). Read in the
   * caller's transaction: a second pooled connection per transaction can exhaust the pool.
   */
  async findOwned(tx: Tx, accountId: string, phoneNumber: string): Promise<PhoneNumberView | undefined> {
    const [row] = await queryRows(tx, `SELECT ${this.columns} FROM phone_numbers WHERE account_id = $1 AND phone_number = $2 AND ${ROUTES}`, [accountId, phoneNumber]);
    return row;
  }

  /** Who takes calls to this number and with which settings, if anyone owns it. */
  async findVoiceRoute(tx: Tx, phoneNumber: string): Promise<VoiceRoute | undefined> {
    const [row] = await queryRows<VoiceRouteRow>(tx, `SELECT account_id, carrier, voice FROM phone_numbers WHERE phone_number = $1 AND ${ROUTES}`, [phoneNumber]);
    return row ? toVoiceRoute(row) : undefined;
  }

  /**
   * findVoiceRoute for several numbers at once, outside any transaction: what a statement that
   * starts many calls decides their plans from before it runs (CallStartsInSets). A hint: that
   * statement reads the routes again (voiceRoutesCte) and acts only where they are as read.
   */
  async voiceRoutes(phoneNumbers: string[]): Promise<Map<string, VoiceRoute>> {
    const rows = await queryRows<VoiceRouteRow & { phone_number: string }>(
      this.dataSource.manager,
      `SELECT phone_number, account_id, carrier, voice FROM phone_numbers WHERE phone_number = ANY ($1::text[]) AND ${ROUTES}`,
      [[...new Set(phoneNumbers)]],
    );
    return new Map(rows.map((row) => [row.phone_number, toVoiceRoute(row)]));
  }

  /**
   * findVoiceRoute for every row of CTE `rows` as a CTE of a statement: (event_id, account_id,
   * carrier, voice) for each row whose `numberColumn` a number of ours is; none for a number
   * nobody owns. Read in the statement's snapshot, without a lock (as findVoiceRoute reads).
   */
  voiceRoutesCte(stmt: CteStatement, name: string, rows: string, numberColumn: string): string {
    return this.routesCte(stmt, name, rows, numberColumn, 'p.account_id, p.carrier, p.voice');
  }

  /**
   * findOwner for every row of CTE `rows` as a CTE of a statement: (event_id, account_id, carrier)
   * for each row whose `numberColumn` a number of ours is; none for a number nobody owns.
   */
  ownersCte(stmt: CteStatement, name: string, rows: string, numberColumn: string): string {
    return this.routesCte(stmt, name, rows, numberColumn, 'p.account_id, p.carrier');
  }

  /** (event_id, `columns` of p) for each row of CTE `rows` whose `numberColumn` a number of ours is. */
  private routesCte(stmt: CteStatement, name: string, rows: string, numberColumn: string, columns: string): string {
    return stmt.with(name, `SELECT r.event_id, ${columns} FROM ${rows} r JOIN phone_numbers p ON p.phone_number = r.${numberColumn} AND p.${ROUTES}`);
  }

  /** Who receives messages to this number (inbound routing), if anyone. */
  async findOwner(tx: Tx, phoneNumber: string): Promise<{ accountId: string; carrier: CarrierName } | undefined> {
    const [row] = await queryRows(tx, `SELECT account_id, carrier FROM phone_numbers WHERE phone_number = $1 AND ${ROUTES}`, [phoneNumber]);
    return row ? { accountId: row.account_id, carrier: row.carrier } : undefined;
  }
}
