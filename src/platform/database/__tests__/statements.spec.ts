import { describe, expect, it } from '@jest/globals';
import { MAX_PREPARED_TEXTS, statementName } from '../statements.js';

describe('statementName', () => {
  it('names a text the same each time, and past MAX_PREPARED_TEXTS texts leaves new ones unnamed', () => {
    const first = statementName('SELECT 1');
    expect(first).toMatch(/^ol_[0-9a-f]{40}$/);
    expect(statementName('SELECT 1')).toBe(first);
    for (let i = 0; i < MAX_PREPARED_TEXTS; i++) statementName(`SELECT ${i} + 1`);
    expect(statementName('SELECT 1')).toBe(first);
    expect(statementName('SELECT a text built at run time')).toBeUndefined();
  });
});
