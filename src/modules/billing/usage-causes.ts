import type { CteStatement } from '../../platform/database/cte-statement.js';
import type { CauseCarrierEvent, CauseResourceType } from './usage-cause.dto.js';

/** One carrier event per source row, as SQL over the source CTE's columns (id NULL: none). */
export interface CauseEventColumns {
  /** Our stored event's id (cev_…). */
  id: string;
  carrierEventId: string;
  role: CauseCarrierEvent['role'];
  /** text, ISO 8601, or NULL. */
  occurredAt: string;
}

/** A cause as SQL over the columns of the CTE a usage row is recorded from (UsageLedger.recordFromCte). */
export interface CauseColumns {
  resource: { type: CauseResourceType; id: string };
  /** SQL text. */
  transition: string;
  settledBy?: string;
  carrier?: string;
  carrierResourceId?: string;
  event?: CauseEventColumns;
  /** SQL jsonb object: how the quantity was counted (billing adds unit_price_micros and quantity). */
  rule: string;
}

/** The cause as one jsonb expression (the shape of UsageCause, less draw_downs, legacy and the price figures billing adds). */
export function causeSql(stmt: CteStatement, cause: CauseColumns): string {
  const event = cause.event;
  const events = event
    ? `CASE WHEN ${event.id} IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('id', ${event.id}, 'carrier_event_id', ${event.carrierEventId}, 'role', ${stmt.param(event.role, 'text')}, 'occurred_at', ${event.occurredAt})) END`
    : `'[]'::jsonb`;
  return `jsonb_build_object('resource', jsonb_build_object('type', ${stmt.param(cause.resource.type, 'text')}, 'id', ${cause.resource.id}),
    'transition', ${cause.transition}, 'settled_by', ${cause.settledBy ?? 'NULL::text'}, 'carrier', ${cause.carrier ?? 'NULL::text'},
    'carrier_resource_id', ${cause.carrierResourceId ?? 'NULL::text'}, 'carrier_events', ${events}, 'price_rule', ${cause.rule})`;
}

/** The price rule of SMS: billed per segment, with the encoding that decided the part size. */
export function segmentRuleSql(segments: string, encoding: string): string {
  return `jsonb_build_object('unit', 'segment', 'segments', ${segments}, 'encoding', ${encoding})`;
}
