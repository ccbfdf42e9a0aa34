import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../../platform/http/pagination.js';
import { CallTimeline, type TimelineEntry } from './call-timeline.js';
import { CALL_COLUMNS, LEG_COLUMNS, toCallView, type CallDirection, type CallRow, type CallStatus, type CallView, type LegRow } from './call-view.js';
import { queryRows } from '../../platform/database/tx.js';
import { createdAtOfId, createdAtOfIds } from '../../platform/retention/id-partition-key.js';

export interface CallFilters {
  status?: CallStatus;
  direction?: CallDirection;
}

function callNotFound(): NotFoundException {
  return new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no call with this id' });
}

/** Reads of calls, always scoped by account: another account's call is not found. */
@Injectable()
export class CallsQuery {
  constructor(
    private readonly dataSource: DataSource,
    private readonly timeline: CallTimeline,
  ) {}

  async get(accountId: string, id: string): Promise<CallView> {
    const [call] = await queryRows(this.dataSource.manager, `SELECT ${CALL_COLUMNS} FROM calls WHERE account_id = $1 AND id = $2 AND ${createdAtOfId('$2')}`, [accountId, id]);
    if (!call) throw callNotFound();
    return toCallView(call, await this.legsOf([id]).then((legs) => legs.get(id) ?? []));
  }

  async list(accountId: string, filters: CallFilters, page: PageRequest): Promise<CallView[]> {
    const calls: CallRow[] = await queryRows(this.dataSource.manager,
      `SELECT ${CALL_COLUMNS} FROM calls
        WHERE account_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR direction = $3) AND ($4::text IS NULL OR id < $4)
        ORDER BY id DESC LIMIT $5`,
      [accountId, filters.status ?? null, filters.direction ?? null, page.after ?? null, page.size + 1],
    );
    const legs = await this.legsOf(calls.map((c) => c.id));
    return calls.map((call) => toCallView(call, legs.get(call.id) ?? []));
  }

  async timelineOf(accountId: string, id: string): Promise<TimelineEntry[]> {
    const [call] = await queryRows(this.dataSource.manager, `SELECT id FROM calls WHERE account_id = $1 AND id = $2 AND ${createdAtOfId('$2')}`, [accountId, id]);
    if (!call) throw callNotFound();
    return this.timeline.list(id);
  }

  private async legsOf(callIds: string[]): Promise<Map<string, LegRow[]>> {
    const byCall = new Map<string, LegRow[]>();
    if (callIds.length === 0) return byCall;
    const legs: LegRow[] = await queryRows(this.dataSource.manager, `SELECT ${LEG_COLUMNS} FROM call_legs WHERE call_id = ANY($1) AND ${createdAtOfIds('$1', 'onceline_id_time(call_id)')} ORDER BY dialed_at, target_index, attempt`, [callIds]);
    for (const leg of legs) byCall.set(leg.call_id, [...(byCall.get(leg.call_id) ?? []), leg]);
    return byCall;
  }
}
