import { isoTimestampSql } from '../../platform/database/cte-statement.js';
import { idKeyOf } from '../../platform/retention/id-partition-key.js';

/** What an attempt needs: the delivery with its endpoint (url, secrets) and its event. */
export interface DeliveryRow {
  id: string;
  status: string;
  round: number;
  attempt_count: number;
  round_first_attempt: number;
  endpoint_id: string;
  url: string;
  enabled: boolean;
  deleted: boolean;
  secrets: string[];
  event_id: string;
  type: string;
  payload: object;
  event_created_at: Date;
}

/** The secrets that sign an attempt: the endpoint's, and its previous one until that expires. */
function secretsSql(w: string): string {
  return `array_remove(ARRAY[${w}.secret, CASE WHEN ${w}.previous_secret_expires_at > now() THEN ${w}.previous_secret END], NULL)`;
}

/** A DeliveryRow's columns over a delivery `d`, its endpoint `w` and its event `e`. */
export const DELIVERY_COLUMNS = `d.id, d.status, d.round, d.attempt_count, d.round_first_attempt, d.endpoint_id,
  w.url, w.enabled, w.deleted_at IS NOT NULL AS deleted, ${secretsSql('w')} AS secrets,
  e.id AS event_id, e.type, e.payload, e.created_at AS event_created_at`;
/**
 * The endpoint, and the event by the delivery's event id. The event's partition is named by the
 * lookup (deliveryByIdWhere), not here: a join clause `onceline_id_key(e.id) = onceline_id_key_of(
 * d.event_id)` lets the planner hash every event of every partition and call both functions on
 * each (an ad hoc pgbench run of the load by id alone, 15,000 events in 33 partitions: 56-87 ms a
 * lookup with that clause, 5 ms without it).
 */
export const DELIVERY_JOINS = `JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN outbound_events e ON e.id = d.event_id`;

/**
 * The WHERE of one delivery by its id (SQL text `deliveryId`), over DELIVERY_JOINS. With its
 * event's id (`eventId`, SQL text) the delivery and its event are each read in the one partition
 * of the event's time (webhook_deliveries and outbound_events are partitioned by it, migration
 * 0047); without it (a job written before jobs carried it) the delivery is probed for in every
 * partition of webhook_deliveries: a delivery id carries its own time, not its event's.
 */
export function deliveryByIdWhere(deliveryId: string, eventId?: string): string {
  if (eventId === undefined) return `d.id = ${deliveryId}`;
  return `d.id = ${deliveryId} AND d.event_id = ${eventId} AND ${idKeyOf(eventId, 'd.event_id')} AND ${idKeyOf(eventId, 'e.id')}`;
}

/**
 * The same row as jsonb, from the statement that just created the delivery: `d` has the
 * delivery's columns, `w` the endpoint's (url, enabled, secret, previous_secret,
 * previous_secret_expires_at; a live one), `e` the event's (id, type, payload, created_at).
 * Read back with deliveryFromJson.
 */
export function deliveryJsonSql(d: string, w: string, e: string): string {
  return `jsonb_build_object('id', ${d}.id, 'status', ${d}.status, 'round', ${d}.round, 'attempt_count', ${d}.attempt_count,
            'round_first_attempt', ${d}.round_first_attempt, 'endpoint_id', ${d}.endpoint_id, 'url', ${w}.url, 'enabled', ${w}.enabled,
            'deleted', false, 'secrets', to_jsonb(${secretsSql(w)}), 'event_id', ${e}.id, 'type', ${e}.type, 'payload', ${e}.payload,
            'event_created_at', ${isoTimestampSql(`${e}.created_at`)})`;
}

/** A DeliveryRow (with `T`'s keys beside) from deliveryJsonSql's jsonb: its one non-JSON type is the event's time. */
export function deliveryFromJson<T extends object>(json: Omit<DeliveryRow, 'event_created_at'> & T & { event_created_at: string }): DeliveryRow & T {
  return { ...json, event_created_at: new Date(json.event_created_at) } as DeliveryRow & T;
}
