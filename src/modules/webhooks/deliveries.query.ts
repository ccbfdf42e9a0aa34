import type { EntityManager } from 'typeorm';
import type { PageRequest } from '../../platform/http/pagination.js';
import type { AttemptView, DeliveryView } from './endpoint.dto.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';

/** Read side of deliveries (with their attempts), shared by the endpoints and events APIs. */

const DELIVERY_SELECT = `
  SELECT d.id, d.event_id, e.type AS event_type, d.endpoint_id, d.status, d.next_attempt_at, d.last_error,
         d.created_at, d.updated_at,
         coalesce((SELECT json_agg(json_build_object(
                    'attempt', a.attempt, 'status_code', a.status_code, 'error', a.error,
                    'duration_ms', a.duration_ms, 'response_excerpt', a.response_excerpt, 'at', a.at) ORDER BY a.attempt)
                     FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id AND ${idKeyOf('d.id', 'a.delivery_id')}), '[]') AS attempts
    FROM webhook_deliveries d JOIN outbound_events e ON e.id = d.event_id AND ${idKeyOf('d.event_id', 'e.id')}`;

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  endpoint_id: string;
  status: string;
  next_attempt_at: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  attempts: Array<Omit<AttemptView, 'at'> & { at: string }>;
}

function toView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    record_type: 'webhook_delivery',
    event_id: row.event_id,
    event_type: row.event_type,
    endpoint_id: row.endpoint_id,
    status: row.status,
    attempts: row.attempts.map((a) => ({ ...a, at: new Date(a.at).toISOString() })),
    next_attempt_at: row.next_attempt_at ? new Date(row.next_attempt_at).toISOString() : null,
    last_error: row.last_error,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** An endpoint's deliveries, newest first (ids are time-ordered), optionally by status; LIMIT size + 1. */
export async function deliveriesOfEndpoint(db: EntityManager, endpointId: string, status: string | undefined, page: PageRequest): Promise<DeliveryView[]> {
  const rows: DeliveryRow[] = await db.query(
    `${DELIVERY_SELECT}
      WHERE d.endpoint_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::text IS NULL OR d.id < $3)
      ORDER BY d.id DESC LIMIT $4`,
    [endpointId, status ?? null, page.after ?? null, page.size + 1],
  );
  return rows.map(toView);
}

export async function deliveriesOfEvent(db: EntityManager, eventId: string): Promise<DeliveryView[]> {
  const rows: DeliveryRow[] = await db.query(`${DELIVERY_SELECT} WHERE d.event_id = $1 AND ${idKeyOf('$1', 'd.event_id')} ORDER BY d.id`, [eventId]);
  return rows.map(toView);
}
