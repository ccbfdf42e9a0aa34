import { invalidParameter } from './query-params.js';

export const MAX_PAGE_SIZE = 250;
export const DEFAULT_PAGE_SIZE = 50;

export interface PageRequest {
  size: number;
  /** Return rows whose id sorts before this one (ids are time-ordered, so: older). */
  after?: string;
}

/** Reads `page[size]` (1..250) and `page[after]` from a query string object. */
export function parsePage(query: Record<string, unknown>): PageRequest {
  const rawSize = query['page[size]'] ?? (query.page as Record<string, unknown> | undefined)?.size;
  const rawAfter = query['page[after]'] ?? (query.page as Record<string, unknown> | undefined)?.after;
  let size = DEFAULT_PAGE_SIZE;
  if (rawSize !== undefined) {
    size = Number(rawSize);
    if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
      throw invalidParameter('page[size]', `page[size] must be an integer from 1 to ${MAX_PAGE_SIZE}`);
    }
  }
  const after = typeof rawAfter === 'string' && rawAfter !== '' ? rawAfter : undefined;
  // A cursor is an id we handed out: printable ASCII. Anything else (a NUL) names no row.
  if (after !== undefined && !/^[\x21-\x7e]+$/.test(after)) throw invalidParameter('page[after]', 'page[after] must be the meta.next_cursor of a previous page');
  return { size, after };
}

/** The contract's list body: rows fetched with LIMIT size + 1 tell whether a next page exists. */
export function pageOf<T extends { id: string }>(rows: T[], page: PageRequest): { data: T[]; meta: { next_cursor: string | null } } {
  const data = rows.slice(0, page.size);
  const next = rows.length > page.size ? data[data.length - 1].id : null;
  return { data, meta: { next_cursor: next } };
}
