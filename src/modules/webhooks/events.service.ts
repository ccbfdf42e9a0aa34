import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import { deliveriesOfEvent } from './deliveries.query.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import type { EventView, EventWithDeliveriesView } from './endpoint.dto.js';
import { queryRows } from '../../platform/database/tx.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';

interface EventRow {
  id: string;
  type: string;
  event_version: number;
  payload: object;
  created_at: Date;
}

function toView(row: EventRow): EventView {
  return { id: row.id, record_type: 'event', type: row.type, event_version: row.event_version, created_at: row.created_at.toISOString(), data: row.payload };
}

/** The customer events of one account (what was, or will be, sent to its endpoints). */
@Injectable()
export class EventsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
    private readonly scheduler: DeliveryScheduler,
  ) {}

  /** Newest first: ids are time-ordered, so the cursor is the last id of the page. */
  async list(accountId: string, type: string | undefined, page: PageRequest): Promise<EventView[]> {
    const rows: EventRow[] = await queryRows(this.dataSource.manager,
      `SELECT id, type, event_version, payload, created_at FROM outbound_events
        WHERE account_id = $1 AND ($2::text IS NULL OR type = $2) AND ($3::text IS NULL OR id < $3)
        ORDER BY id DESC LIMIT $4`,
      [accountId, type ?? null, page.after ?? null, page.size + 1],
    );
    return rows.map(toView);
  }

  async get(accountId: string, id: string): Promise<EventWithDeliveriesView> {
    return this.withDeliveries(await this.find(accountId, id));
  }

  /** New attempts with the same event id (same webhook-id) to every enabled endpoint subscribed to it. */
  async redeliver(accountId: string, id: string): Promise<EventWithDeliveriesView> {
    const row = await this.find(accountId, id);
    await this.uow.run((tx) => this.scheduler.redeliverEvent(tx, id, accountId, row.type));
    // An event never changes after insert: only its deliveries are read again.
    return this.withDeliveries(row);
  }

  private async withDeliveries(row: EventRow): Promise<EventWithDeliveriesView> {
    return { ...toView(row), deliveries: await deliveriesOfEvent(this.dataSource.manager, row.id) };
  }

  private async find(accountId: string, id: string): Promise<EventRow> {
    const [row]: EventRow[] = await queryRows(this.dataSource.manager,
      `SELECT id, type, event_version, payload, created_at FROM outbound_events WHERE id = $1 AND ${idKeyOf('$1')} AND account_id = $2`,
      [id, accountId],
    );
    if (!row) throw new NotFoundException(`event ${id} not found`);
    return row;
  }
}
