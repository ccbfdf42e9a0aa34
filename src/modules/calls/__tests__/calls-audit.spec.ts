import { describe, expect, it } from '@jest/globals';
import { parseCarrierLog } from '../calls-audit.js';

describe('parseCarrierLog', () => {
  it('reads Telnyx and Twilio ids, lower-cases statuses and numbers the lines it cannot read', () => {
    const text = [
      '{"call_session_id":"s1","status":"Completed","start_time":"2026-12-01T10:00:00Z","end_time":"2026-12-01T10:01:00Z","duration_secs":60}',
      '',
      '{"call_sid":"CA1","status":"busy","duration_secs":"0"}',
      'not json',
      '{"status":"completed"}',
      '{"call_sid":"CA2","status":"completed","duration_secs":"sixty"}',
      '{"call_sid":"CA3","status":"completed","start_time":"yesterday"}',
    ].join('\n');
    const { entries, invalidLines } = parseCarrierLog(text);
    expect(entries).toEqual([
      { carrierCallId: 's1', status: 'completed', startTime: '2026-12-01T10:00:00Z', endTime: '2026-12-01T10:01:00Z', durationSecs: 60 },
      { carrierCallId: 'CA1', status: 'busy', durationSecs: 0, startTime: undefined, endTime: undefined },
      { carrierCallId: 'CA3', status: 'completed', startTime: undefined, endTime: undefined, durationSecs: undefined },
    ]);
    expect(invalidLines).toEqual([4, 5, 6]);
  });
});
