import { Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../../platform/http/pagination.js';
import { MESSAGE_COLUMNS, toView, type MessageView } from './message-view.js';
import { queryRows } from '../../platform/database/tx.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';

export interface MessageFilters {
  direction?: 'outbound' | 'inbound';
  status?: string;
}

/** Reads of messages, always scoped by account: another account's message is not found. */
@Injectable()
export class MessagesQuery {
  constructor(private readonly dataSource: DataSource) {}

  async get(accountId: string, id: string): Promise<MessageView & { status_history: { status: string; at: string; detail?: string }[] }> {
    const [row] = await queryRows(this.dataSource.manager, `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE account_id = $1 AND id = $2 AND ${idKeyOf('$2')}`, [accountId, id]);
    if (!row) throw new NotFoundException(`message ${id} not found`);
    const history = await queryRows(this.dataSource.manager, `SELECT status, at, detail FROM message_status_history WHERE message_id = $1 AND ${idKeyOf('$1', 'message_id')} ORDER BY id`, [id]);
    return {
      ...toView(row),
      status_history: history.map((h: { status: string; at: Date; detail: string | null }) => ({ status: h.status, at: h.at.toISOString(), ...(h.detail !== null && { detail: h.detail }) })),
    };
  }

  async list(accountId: string, filters: MessageFilters, page: PageRequest): Promise<MessageView[]> {
    const rows = await queryRows(this.dataSource.manager,
      `SELECT ${MESSAGE_COLUMNS} FROM messages
        WHERE account_id = $1 AND ($2::text IS NULL OR direction = $2) AND ($3::text IS NULL OR status = $3)
          AND ($4::text IS NULL OR id < $4)
        ORDER BY id DESC LIMIT $5`,
      [accountId, filters.direction ?? null, filters.status ?? null, page.after ?? null, page.size + 1],
    );
    return rows.map(toView);
  }
}
