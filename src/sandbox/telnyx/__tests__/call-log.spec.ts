import { describe, expect, it } from '@jest/globals';
import { TARGET_HANGUPS, type Hangup } from '../call-hangups.js';
import { callLogLine, callLogStatus, formatCallLog } from '../call-log.js';

const at = (s: number) => new Date(Date.UTC(2026, 10, 29, 22, 0, 0) + s);
const numbers = { from: '+13125550001', to: '+15550001111' };
const normal: Hangup = { cause: 'normal_clearing', source: 'caller', sip: '200' };

describe('the call log', () => {
  it('writes one line per call with the fields audit:calls reads; duration from answer to end in whole seconds', () => {
    const line = callLogLine({ ...numbers, callSessionId: 's1', startedAt: at(0), answeredAt: at(4_000), endedAt: at(65_600), hangup: normal });
    expect(line).toEqual({ call_session_id: 's1', from: '+13125550001', to: '+15550001111', status: 'completed', start_time: '2026-11-29T22:00:00.000Z', end_time: '2026-11-29T22:01:05.600Z', duration_secs: 62 });
    expect(callLogLine({ ...numbers, callSessionId: 's2', startedAt: at(0), answeredAt: at(0), endedAt: at(400), hangup: normal }).duration_secs).toBe(0);
    expect(callLogLine({ ...numbers, callSessionId: 's3', startedAt: at(0), endedAt: at(9_000), hangup: TARGET_HANGUPS.timeout }).duration_secs).toBe(0);
  });

  it('is completed once answered, whatever ended it; otherwise says why it never was', () => {
    expect(callLogStatus({ answeredAt: at(1), hangup: TARGET_HANGUPS.time_limit })).toBe('completed');
    expect(callLogStatus({ hangup: TARGET_HANGUPS.busy })).toBe('busy');
    expect(callLogStatus({ hangup: TARGET_HANGUPS.decline })).toBe('rejected');
    expect(callLogStatus({ hangup: { cause: 'originator_cancel', source: 'caller', sip: '487' } })).toBe('canceled');
    expect(callLogStatus({ hangup: TARGET_HANGUPS.sip_error })).toBe('failed');
    expect(callLogStatus({ hangup: TARGET_HANGUPS.timeout })).toBe('no-answer');
    expect(callLogStatus({ hangup: { cause: 'normal_clearing', source: 'callee', sip: 'unspecified' } })).toBe('no-answer');
  });

  it('is newline-delimited JSON, each line ending in a newline', () => {
    const line = callLogLine({ ...numbers, callSessionId: 's1', startedAt: at(0), answeredAt: at(1000), endedAt: at(3000), hangup: normal });
    const text = formatCallLog([line, { ...line, call_session_id: 's2' }]);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trimEnd().split('\n').map((l) => JSON.parse(l).call_session_id)).toEqual(['s1', 's2']);
    expect(formatCallLog([])).toBe('');
  });
});
