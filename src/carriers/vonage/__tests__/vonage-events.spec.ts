import { describe, expect, it } from '@jest/globals';
import { MalformedWebhook } from '../../carrier-adapter.js';
import { e164, normalizeVonage, readCallback } from '../vonage-events.js';

const inbound = {
  channel: 'sms', message_uuid: 'aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab', to: '447700900000', from: '447700900001',
  timestamp: '2026-11-29T20:16:07Z', text: 'Hello', message_type: 'text',
};
const status = (word: string, extra: Record<string, unknown> = {}) => ({
  message_uuid: 'bbbbbbbb-cccc-4ddd-8eee-0123456789ab', to: '447700900002', from: '447700900000',
  timestamp: '2026-11-29T20:17:11Z', status: word, channel: 'sms', ...extra,
});
const normalize = (body: unknown) => normalizeVonage(readCallback(body));

describe('Vonage Messages callbacks, normalized', () => {
  it('an inbound SMS: our numbers with the +, keyed message_uuid:inbound', () => {
    expect(normalize(inbound)).toEqual({
      carrier: 'vonage', kind: 'message.received', carrierEventId: 'aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab:inbound', occurredAt: '2026-11-29T20:16:07.000Z',
      carrierMessageId: 'aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab', from: '+447700900001', to: '+447700900000', text: 'Hello',
    });
  });

  it('an inbound SMS as Vonage publishes it (inboundMessageSMS: no message_type) is recorded; another message_type is not an SMS', () => {
    const { message_type: _, ...published } = inbound;
    expect(normalize(published)).toMatchObject({ kind: 'message.received', text: 'Hello', from: '+447700900001' });
    expect(normalize({ ...inbound, message_type: 'image' })).toMatchObject({ kind: 'ignored', carrierEventType: 'sms.inbound' });
  });

  it.each([
    ['submitted', 'sent'], ['delivered', 'delivered'], ['read', 'delivered'],
    ['rejected', 'failed'], ['undeliverable', 'failed'], ['failed', 'failed'], ['something_new', 'unknown'],
  ])('status %s → %s, keyed message_uuid:status (unknown is stored, not guessed)', (word, ours) => {
    expect(normalize(status(word))).toMatchObject({
      kind: 'message.status', status: ours, carrierStatus: word, carrierEventId: `bbbbbbbb-cccc-4ddd-8eee-0123456789ab:${word}`, carrierMessageId: 'bbbbbbbb-cccc-4ddd-8eee-0123456789ab',
    });
  });

  it('reads the error code (title) and detail of a failed status', () => {
    const error = { type: 'https://developer.vonage.com/api-errors/messages#1240', title: 1240, detail: 'Illegal Number' };
    // 1240: the handset sent a STOP (Vonage reports it only in the status webhook): the recipient opted out
    expect(normalize(status('rejected', { error }))).toMatchObject({ status: 'failed', errorCode: '1240', errorDetail: 'Illegal Number', reason: 'recipient_opted_out' });
    const unroutable = { type: 'https://developer.vonage.com/api-errors/messages#1250', title: 1250, detail: 'Unroutable' };
    expect(normalize(status('rejected', { error: unroutable }))).not.toHaveProperty('reason');
    expect(normalize(status('delivered'))).not.toHaveProperty('errorCode');
  });

  it('another channel, or a non-text inbound, is kept as ignored', () => {
    expect(normalize({ ...inbound, channel: 'whatsapp' })).toMatchObject({ kind: 'ignored', carrierEventType: 'whatsapp.inbound' });
    expect(normalize(status('read', { channel: 'viber_service' }))).toMatchObject({ kind: 'ignored' });
    expect(normalize({ ...inbound, message_type: 'image' })).toMatchObject({ kind: 'ignored' });
  });

  it.each([
    ['not an object', []],
    ['no message_uuid', { ...inbound, message_uuid: undefined }],
    ['an empty status', status('')],
    ['no timestamp', { ...inbound, timestamp: undefined }],
    ['a timestamp that is not a time', { ...inbound, timestamp: 'yesterday' }],
    ['no channel', { ...inbound, channel: undefined }],
    ['an inbound without from', { ...inbound, from: undefined }],
  ])('a body with %s is malformed', (_, body) => {
    expect(() => normalize(body)).toThrow(MalformedWebhook);
  });

  it('e164 adds the + Vonage leaves out, once', () => {
    expect([e164('447700900000'), e164('+447700900000')]).toEqual(['+447700900000', '+447700900000']);
  });
});
