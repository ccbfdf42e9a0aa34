import { describe, expect, it } from '@jest/globals';
import { CteStatement } from '../../../platform/database/cte-statement.js';
import { CallTimeline } from '../call-timeline.js';

describe('CallTimeline.recordIn', () => {
  const entry = (outcome: 'stale' | 'applied') => ({ callId: 'call_1', carrierEventId: 'cev_1', eventType: 'call.hangup', leg: 'leg_1', outcome, occurredAt: '2026-12-03T00:00:00.000Z', receivedAt: new Date(0) });

  it("adds the entry as one CTE of the statement; a second entry for the same statement is left out (the first recorded stands, as the unique index kept it when each was a statement)", () => {
    const timeline = new CallTimeline(undefined as never);
    const stmt = new CteStatement();
    timeline.recordIn(stmt, entry('stale'));
    timeline.recordIn(stmt, entry('applied'));
    const text = stmt.text('SELECT 1');
    expect(text.match(/INSERT INTO call_timeline/g)).toHaveLength(1);
    expect(stmt.params).toContain('stale');
    expect(stmt.params).not.toContain('applied');
  });
});
