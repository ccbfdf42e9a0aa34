import type { StatementView } from './statement.dto.js';
import type { PriceRule, UsageCause } from './usage-cause.dto.js';

/** The CSV columns of a statement: the usage row, then its cause in short. */
export const STATEMENT_CSV_COLUMNS = [
  'usage_record_id', 'created_at', 'kind', 'resource_id', 'quantity', 'unit_price_micros', 'amount_micros', 'currency',
  'transition', 'carrier_events', 'price_rule', 'draw_downs',
] as const;

/** RFC 4180: a field with a comma, a quote or a line break is quoted, its quotes doubled. */
function field(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function rule(r: PriceRule): string {
  if (r.unit === 'segment') return `${r.segments} segments ${r.encoding ?? ''}`.trim();
  if (r.unit === 'minute') return `${r.duration_seconds ?? '?'} s (${r.answered_at ?? '?'} to ${r.ended_at ?? '?'}): ${r.counted ?? ''}`;
  if (r.unit === 'number_month') return `month ${r.month}`;
  return r.unit;
}

function transition(cause: UsageCause): string {
  return [cause.transition, cause.settled_by && `by ${cause.settled_by}`, cause.legacy && '(legacy)'].filter(Boolean).join(' ');
}

/**
 * A statement as CSV: one line per usage row (its cause in the last four columns: our event
 * ids with the carrier's after a slash, draw-downs as entitlement:units), then `total`.
 */
export function statementCsv(statement: StatementView): string {
  const lines = statement.lines.map((l) => [
    l.id, l.created_at, l.kind, l.resource_id, l.quantity, l.unit_price_micros, l.amount_micros, l.currency,
    transition(l.cause),
    l.cause.carrier_events.map((e) => `${e.id}/${e.carrier_event_id}`).join(' '),
    rule(l.cause.price_rule),
    l.cause.draw_downs.map((d) => `${d.entitlement_id}:${d.quantity}`).join(' '),
  ]);
  const total = ['total', '', '', '', '', '', statement.totals.amount_micros, statement.currency, '', '', '', ''];
  return [[...STATEMENT_CSV_COLUMNS], ...lines, total].map((row) => row.map(field).join(',')).join('\n') + '\n';
}
