import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../../platform/http/pagination.js';
import type { EntitlementType } from './entitlement-types.js';
import { ENTITLEMENT_COLUMNS, toEntitlementView, type EntitlementView } from './entitlement-view.js';
import { queryRows } from '../../platform/database/tx.js';

/** The account's entitlements, newest first. */
@Injectable()
export class EntitlementsQuery {
  constructor(private readonly dataSource: DataSource) {}

  async list(accountId: string, page: PageRequest, type?: EntitlementType): Promise<EntitlementView[]> {
    const rows = await queryRows(this.dataSource.manager,
      `SELECT ${ENTITLEMENT_COLUMNS} FROM entitlements e
        WHERE e.account_id = $1 AND ($2::text IS NULL OR e.type = $2) AND ($3::text IS NULL OR e.id < $3)
        ORDER BY e.id DESC LIMIT $4`,
      [accountId, type ?? null, page.after ?? null, page.size + 1],
    );
    return rows.map(toEntitlementView);
  }
}
