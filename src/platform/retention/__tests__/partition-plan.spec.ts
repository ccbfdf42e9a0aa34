import { describe, expect, it } from '@jest/globals';
import { partitionPlan, type PartitionInfo } from '../partition-plan.js';

const DAY = 86_400_000;
const at = (iso: string) => new Date(iso);
const part = (name: string, from: string | null, to: string): PartitionInfo => ({ name, from: from ? at(from) : null, to: at(to), bytes: 0, rowsEstimate: null, detachPending: false });
const daily = { periodSeconds: 86_400, ahead: 2, retentionHours: 96 };

describe('partitionPlan: what the next maintenance run makes and finds past retention', () => {
  it('makes day partitions from the end of the last one until today plus `ahead` days are covered, aligned on 00:00 UTC', () => {
    const plan = partitionPlan([part('p1207', '2026-12-07T00:00:00Z', '2026-12-08T00:00:00Z')], at('2026-12-07T13:00:00Z'), daily);
    expect(plan.create.map((c) => [c.from.toISOString(), c.to.toISOString()])).toEqual([
      ['2026-12-08T00:00:00.000Z', '2026-12-09T00:00:00.000Z'],
      ['2026-12-09T00:00:00.000Z', '2026-12-10T00:00:00.000Z'],
    ]);
  });

  it('makes nothing when the partitions already reach far enough', () => {
    const parts = [0, 1, 2].map((d) => part(`p${d}`, new Date(Date.UTC(2026, 11, 7) + d * DAY).toISOString(), new Date(Date.UTC(2026, 11, 8) + d * DAY).toISOString()));
    expect(partitionPlan(parts, at('2026-12-07T23:59:59Z'), daily).create).toEqual([]);
  });

  it('with no partition at all, starts at the current period; after a period change, the first new one ends on the new alignment', () => {
    const none = partitionPlan([], at('2026-12-07T13:00:30Z'), { periodSeconds: 60, ahead: 1, retentionHours: 1 });
    expect(none.create.map((c) => c.from.toISOString())).toEqual(['2026-12-07T13:00:00.000Z', '2026-12-07T13:01:00.000Z']);
    const changed = partitionPlan([part('p', '2026-12-07T00:00:00Z', '2026-12-07T12:30:00Z')], at('2026-12-07T12:10:00Z'), { periodSeconds: 3600, ahead: 1, retentionHours: 1 });
    expect(changed.create.map((c) => [c.from.toISOString(), c.to.toISOString()])).toEqual([
      ['2026-12-07T12:30:00.000Z', '2026-12-07T13:00:00.000Z'],
      ['2026-12-07T13:00:00.000Z', '2026-12-07T14:00:00.000Z'],
    ]);
  });

  it('past retention: every partition whose whole range is older than it (the legacy one too), never the newest', () => {
    const parts = [
      part('legacy', null, '2026-12-01T00:00:00Z'),
      part('p1201', '2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z'),
      part('p1203', '2026-12-03T00:00:00Z', '2026-12-04T00:00:00Z'),
      part('p1204', '2026-12-04T00:00:00Z', '2026-12-05T00:00:00Z'),
    ];
    // 96 h before 2026-12-07T12:00Z is 2026-12-03T12:00Z: p1203 ends after it.
    expect(partitionPlan(parts, at('2026-12-07T12:00:00Z'), daily).expired.map((p) => p.name)).toEqual(['legacy', 'p1201']);
    expect(partitionPlan(parts.slice(0, 1), at('2027-01-01T00:00:00Z'), daily).expired).toEqual([]);
  });
});
