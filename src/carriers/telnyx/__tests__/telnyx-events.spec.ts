import { describe, expect, it } from '@jest/globals';
import { normalizeTelnyx, readEnvelope } from '../telnyx-events.js';

/** call.recording.saved as Telnyx's reference publishes it (CallRecordingSaved.example): no call_control_id. */
const published = {
  data: {
    event_type: 'call.recording.saved', id: '0ccc7b54-4df3-4bca-a65a-3da1ecc777f0', occurred_at: '2018-02-02T22:25:27.521992Z', record_type: 'event',
    payload: {
      call_leg_id: '428c31b6-7af4-4bcb-b7f5-5013ef9657c1', call_session_id: '428c31b6-7af4-4bcb-b7f5-5013ef9657c1', channels: 'single',
      client_state: 'aGF2ZSBhIG5pY2UgZGF5ID1d', connection_id: '7267xxxxxxxxxxxxxx',
      recording_urls: { mp3: 'http://example.com/recording.mp3', wav: 'http://example.com/recording.wav' },
    },
  },
};

describe('Telnyx call.recording.saved', () => {
  it('as published (no call_control_id): the recording of the session, naming no leg to command', () => {
    const event = normalizeTelnyx(readEnvelope(structuredClone(published)));
    expect(event).toMatchObject({ kind: 'call.recording.saved', callSessionId: '428c31b6-7af4-4bcb-b7f5-5013ef9657c1', recordingUrl: 'http://example.com/recording.mp3' });
    expect(event).not.toHaveProperty('carrierCallId');
    // A client_state that is not ours names no leg of ours.
    expect(event).not.toHaveProperty('ourLeg');
  });

  it('with a call_control_id (as Telnyx also sends it): that leg', () => {
    const body = structuredClone(published) as any;
    body.data.payload.call_control_id = 'v3:leg';
    expect(normalizeTelnyx(readEnvelope(body))).toMatchObject({ kind: 'call.recording.saved', carrierCallId: 'v3:leg' });
  });
});
