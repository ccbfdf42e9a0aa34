/**
 * One place where what was sent (by our app to a carrier, or by the sandbox or a fake playing a
 * carrier) differs from the carrier's published document.
 */
export interface Divergence {
  /** `operationId METHOD /template` (or `webhook callHangup`, `response of …`). */
  operation: string;
  /** JSON pointer into what was sent: `/body/to`, `/query/filter[limit]`, `/header/idempotency-key`, `/status`. */
  field: string;
  /** What the document says there. */
  doc: string;
  /** What was sent (abbreviated). */
  sent: string;
}

export function shown(value: unknown, max = 160): string {
  const text = value === undefined ? 'nothing' : typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export function formatDivergence(d: Divergence): string {
  return `${d.operation}: ${d.field}: the document says ${d.doc}; sent ${d.sent}`;
}

/** A readable report of divergences, or '' when there are none. */
export function divergenceReport(divergences: Divergence[], where = 'carrier contract'): string {
  if (divergences.length === 0) return '';
  const distinct = [...new Set(divergences.map(formatDivergence))];
  return `${where}: ${distinct.length} divergence(s) from the carriers' published documents (test/fixtures/carrier-specs):\n  - ${distinct.join('\n  - ')}`;
}

/** Thrown by ContractRecorder.expectNoDivergences (and so by a fake's stop()). */
export class ContractDivergenceError extends Error {
  constructor(readonly divergences: Divergence[], where?: string) {
    super(divergenceReport(divergences, where));
    this.name = 'ContractDivergenceError';
  }
}
