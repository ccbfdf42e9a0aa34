import { describe, expect, it } from '@jest/globals';
import { UnprocessableEntityException } from '@nestjs/common';
import fc from 'fast-check';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageOf, parsePage } from '../pagination.js';

/** The contract's error body of a thrown 422, or a failure if something else was thrown. */
function problem(read: () => unknown): unknown {
  try {
    read();
  } catch (err) {
    expect(err).toBeInstanceOf(UnprocessableEntityException);
    return (err as UnprocessableEntityException).getResponse();
  }
  throw new Error('expected a 422');
}

const sizeError = {
  errors: [{ code: 'validation_failed', title: 'Validation failed', detail: `page[size] must be an integer from 1 to ${MAX_PAGE_SIZE}`, source: { parameter: 'page[size]' } }],
};

describe('parsePage', () => {
  it('defaults to 50 rows from the newest', () => {
    expect(parsePage({})).toEqual({ size: DEFAULT_PAGE_SIZE, after: undefined });
    expect(DEFAULT_PAGE_SIZE).toBe(50);
  });

  it('reads flat keys (page[size]) and nested ones (page.size) alike', () => {
    expect(parsePage({ 'page[size]': '10', 'page[after]': 'msg_a' })).toEqual({ size: 10, after: 'msg_a' });
    expect(parsePage({ page: { size: '10', after: 'msg_a' } })).toEqual({ size: 10, after: 'msg_a' });
  });

  it('accepts 1 and 250', () => {
    expect(parsePage({ 'page[size]': '1' }).size).toBe(1);
    expect(parsePage({ 'page[size]': String(MAX_PAGE_SIZE) }).size).toBe(MAX_PAGE_SIZE);
  });

  it.each(['0', '251', '-1', '2.5', 'abc', 'Infinity', 'NaN', '1e9', ''])('refuses page[size]=%j with a 422 naming the parameter', (size) => {
    expect(problem(() => parsePage({ 'page[size]': size }))).toEqual(sizeError);
  });

  it('refuses a repeated or structured page[size] cleanly', () => {
    expect(problem(() => parsePage({ 'page[size]': ['10', '20'] }))).toEqual(sizeError);
    expect(problem(() => parsePage({ 'page[size]': { a: 1 } }))).toEqual(sizeError);
  });

  it('any page[size] that parses is an integer in [1, 250]; anything else is a 422, never another error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer().map(String), fc.double().map(String)), (size) => {
        let parsed: number | undefined;
        try {
          parsed = parsePage({ 'page[size]': size }).size;
        } catch (err) {
          expect(err).toBeInstanceOf(UnprocessableEntityException);
          return;
        }
        expect(Number.isInteger(parsed)).toBe(true);
        expect(parsed).toBeGreaterThanOrEqual(1);
        expect(parsed).toBeLessThanOrEqual(MAX_PAGE_SIZE);
      }),
    );
  });

  it('an empty or non-string cursor is no cursor (first page)', () => {
    for (const after of ['', undefined, ['msg_a', 'msg_b'], { x: 1 }, 42]) expect(parsePage({ 'page[after]': after }).after).toBeUndefined();
  });

  it('a cursor is opaque printable text handed back unchanged (it is only ever a bound parameter)', () => {
    const printable = fc.string({ minLength: 1, unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) });
    fc.assert(fc.property(printable, (cursor) => expect(parsePage({ 'page[after]': cursor }).after).toBe(cursor)));
    expect(parsePage({ 'page[after]': "x'OR'1'='1'--" }).after).toBe("x'OR'1'='1'--");
  });

  // PostgreSQL refuses text containing U+0000 (SQLSTATE 22021): such a cursor never reaches a query.
  it.each(['\u0000', 'msg_1\u0000', ' ', 'msg_\u00e9', '\n'])('refuses the cursor %j (no id we hand out looks like it) with a 422 naming page[after]', (cursor) => {
    expect(() => parsePage({ 'page[after]': cursor })).toThrow(expect.objectContaining({ status: 422 }));
    try {
      parsePage({ 'page[after]': cursor });
    } catch (err) {
      expect(JSON.stringify((err as { getResponse(): unknown }).getResponse())).toContain('page[after]');
    }
  });
});

describe('pageOf', () => {
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `msg_${String(100 - i).padStart(3, '0')}` }));

  it('size + 1 rows fetched: returns size rows and the last one as the next cursor', () => {
    const page = pageOf(rows(4), { size: 3 });
    expect(page.data.map((r) => r.id)).toEqual(['msg_100', 'msg_099', 'msg_098']);
    expect(page.meta.next_cursor).toBe('msg_098');
  });

  it('size rows or fewer: the last page, next_cursor null', () => {
    expect(pageOf(rows(3), { size: 3 }).meta.next_cursor).toBeNull();
    expect(pageOf(rows(1), { size: 3 })).toEqual({ data: rows(1), meta: { next_cursor: null } });
    expect(pageOf([], { size: 3 })).toEqual({ data: [], meta: { next_cursor: null } });
  });

  it('walking pages with the cursor visits every row exactly once, in order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 10 }), (total, size) => {
        const all = rows(total);
        const seen: string[] = [];
        let after: string | undefined;
        for (let guard = 0; guard <= total + 1; guard++) {
          // What the list queries do: id < after, newest first, LIMIT size + 1.
          const fetched = all.filter((r) => after === undefined || r.id < after).slice(0, size + 1);
          const page = pageOf(fetched, parsePage({ 'page[size]': String(size), 'page[after]': after }));
          seen.push(...page.data.map((r) => r.id));
          if (page.meta.next_cursor === null) break;
          after = page.meta.next_cursor;
        }
        expect(seen).toEqual(all.map((r) => r.id));
      }),
    );
  });
});
