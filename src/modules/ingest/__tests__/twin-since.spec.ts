import { describe, expect, it } from '@jest/globals';
import type { AcceptedWebhook } from '../../../carriers/carrier-adapter.js';
import { CARRIER_CLOCK_MARGIN_MS, twinSince } from '../carrier-event-writer.js';

const accepted = (carrierEventTime?: string): AcceptedWebhook => ({
  event: { carrier: 'telnyx', kind: 'ignored', carrierEventId: 'e', occurredAt: '2026-12-07T12:00:00.000Z', carrierEventType: 'x' } as AcceptedWebhook['event'],
  carrierEventType: 'x',
  payloadJson: '{}',
  carrierEventTime,
});

describe('twinSince: the earliest a twin of an event can have been stored', () => {
  const now = Date.parse('2026-12-07T12:00:00.000Z');

  it('is the carrier\'s time for the event less the clock margin', () => {
    expect(twinSince(accepted('2026-12-04T10:00:00.000Z'), now)).toBe(new Date(Date.parse('2026-12-04T10:00:00.000Z') - CARRIER_CLOCK_MARGIN_MS).toISOString());
  });

  it('never starts after now less the margin, whatever the carrier\'s clock says', () => {
    expect(twinSince(accepted('2027-01-01T00:00:00.000Z'), now)).toBe(new Date(now - CARRIER_CLOCK_MARGIN_MS).toISOString());
  });

  it('is null (every partition) without a carrier time, or with one that does not parse', () => {
    expect(twinSince(accepted(undefined), now)).toBeNull();
    expect(twinSince(accepted('yesterday'), now)).toBeNull();
  });
});
