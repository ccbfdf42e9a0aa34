import { describe, expect, it } from '@jest/globals';
import type { CallEvent, NormalizedEvent } from '../../../carriers/normalized-event.js';
import { mostUrgent } from '../../../platform/database/connection-budget.js';
import { urgencyOf } from '../../ingest/carrier-event-processor.js';
import { CallControlCommandsJob } from '../calls.jobs.js';

/** A call event of `kind`, of a leg we dialed when `ourLeg` is given (else the caller's). */
function callEvent(kind: CallEvent['kind'], ourLeg?: CallEvent['ourLeg']): NormalizedEvent {
  return {
    carrier: 'telnyx', carrierEventId: `ev-${kind}`, occurredAt: new Date().toISOString(), kind, carrierCallId: 'v3:leg', callSessionId: 'session-1',
    direction: 'inbound', progress: 'ringing', carrierStatus: kind, ...(ourLeg && { ourLeg }),
  } as NormalizedEvent;
}

const leg = (target: number, attempt = 1) => ({ callId: 'call-1', target, attempt });
const commandsUrgency = (commands: object[]) => CallControlCommandsJob.urgencyOf!({ callId: 'call-1', commands } as never);

describe('a person on the line first (Urgency of call work)', () => {
  it("a leg's answer and its call.initiated are served now, the rest of a call in progress soon, a new call's first event new, anything else later", () => {
    expect(urgencyOf(callEvent('call.answered', leg(2)))).toBe('now');
    expect(urgencyOf(callEvent('call.initiated', leg(1)))).toBe('now');
    expect(urgencyOf(callEvent('call.hangup', leg(0)))).toBe('soon');
    expect(urgencyOf(callEvent('call.bridged'))).toBe('soon');
    expect(urgencyOf(callEvent('call.hangup'))).toBe('soon');
    expect(urgencyOf(callEvent('call.initiated'))).toBe('new');
    expect(urgencyOf({ carrier: 'telnyx', carrierEventId: 'sms', occurredAt: new Date().toISOString(), kind: 'message.received' } as NormalizedEvent)).toBe('later');
  });

  it("a join's commands now, a hand-off's dial and hangups soon, a new call's first dial next", () => {
    expect(commandsUrgency([{ action: 'answer', commandId: 'a' }, { action: 'bridge', commandId: 'b' }])).toBe('now');
    expect(commandsUrgency([{ action: 'dial', commandId: 'd', leg: leg(1) }])).toBe('soon');
    expect(commandsUrgency([{ action: 'dial', commandId: 'd', leg: leg(0, 2) }])).toBe('soon');
    expect(commandsUrgency([{ action: 'hangup', commandId: 'h' }])).toBe('soon');
    expect(commandsUrgency([{ action: 'dial', commandId: 'd', leg: leg(0) }])).toBe('next');
  });

  it('a batch of runs takes the urgency of its most urgent', () => {
    expect(mostUrgent(['later', 'new', 'next', 'soon'])).toBe('soon');
    expect(mostUrgent(['later', 'new', 'next'])).toBe('next');
    expect(mostUrgent(['next', 'now'])).toBe('now');
    expect(mostUrgent([])).toBe('later');
  });
});
