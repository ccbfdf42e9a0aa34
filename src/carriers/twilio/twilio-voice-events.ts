import type { CallEndReason, CallEvent, CallRecordingSaved, NormalizedEvent } from '../normalized-event.js';
import { MalformedWebhook } from '../carrier-adapter.js';
import { bounded, BOUNDS } from '../shape.js';
import { boundedField, normalizeTwilio, occurredAt, readCallback, required, requiredSid, requiredWord, seconds } from './twilio-events.js';
import type { FormFields } from './twilio-signature.js';

export type VoiceChannel = 'voice' | 'voice.dial' | 'voice.status' | 'voice.recording';

/** A voice callback in our words, with its dedupe key (signed fields and the signed query only). */
export interface VoiceCallback {
  event: NormalizedEvent;
  carrierEventType: string;
}

/** DialCallStatus → why the leg we dialed ended; `completed` (and `answered`) mean it was answered and talked. */
const DIAL_END_REASONS: Record<string, CallEndReason> = {
  completed: 'completed',
  answered: 'completed',
  busy: 'declined',
  'no-answer': 'no_answer',
  failed: 'failed',
  // The caller left while the target rang: the call's own status callback ends it.
  canceled: 'completed',
};

/** Twilio CallStatus words that mean the call is over. */
const FINAL_CALL_STATUSES = new Set(['completed', 'busy', 'failed', 'no-answer', 'canceled']);

/**
 * The voice webhooks: the incoming call (the call's start, whatever CallStatus says), a dial's
 * result (`/dial?call=&target=`: which leg of ours it was is in the query we signed into the
 * action URL), status callbacks, and a voicemail recording (`/recording?call=`).
 */
export function readVoiceCallback(fields: FormFields, channel: VoiceChannel, url: string): VoiceCallback {
  const query = new URL(url, 'http://query.invalid').searchParams;
  if (channel === 'voice.dial') return dialResult(fields, query);
  if (channel === 'voice.recording') return recording(fields);
  const callback = readCallback(fields, 'voice');
  if (channel === 'voice') {
    // Its own key: a status callback saying `ringing` (`<Sid>:ringing`) that came first must not
    // make the incoming request a duplicate, answered with the status callback's <Response/>.
    const incoming = normalizeTwilio(callback, `${callback.sid}:incoming:${callback.status}`, 'voice') as CallEvent;
    return { event: { ...incoming, kind: 'call.initiated', progress: 'initiated' }, carrierEventType: `voice.incoming.${callback.status}` };
  }
  const event = normalizeTwilio(callback, `${callback.sid}:${callback.status}`, 'voice') as CallEvent;
  // A status callback never starts a call (only the incoming request does): `initiated` is progress.
  const kind = event.kind === 'call.initiated' ? 'call.status' : event.kind;
  return { event: { ...event, kind }, carrierEventType: `voice.status.${callback.status}` };
}

function dialResult(fields: FormFields, query: URLSearchParams): VoiceCallback {
  const callSid = requiredSid(fields, 'CallSid');
  const status = requiredWord(fields, 'DialCallStatus');
  const leg = { callId: queryValue(query, 'call'), target: targetIndex(query), attempt: 1 };
  const dialSid = boundedField(fields, BOUNDS.idLength, 'DialCallSid');
  const duration = seconds(fields, 'DialCallDuration') ?? 0;
  const answered = status === 'completed' || status === 'answered';
  // The parent call's own status rides along: a final word means the caller left while this target rang.
  const callerLeft = FINAL_CALL_STATUSES.has(boundedField(fields, BOUNDS.wordLength, 'CallStatus') ?? '');
  const event: CallEvent = {
    carrier: 'twilio',
    // CallSid + target + DialCallSid: each step of the chain is its own event, a repeat of one step a duplicate.
    carrierEventId: `${callSid}:dial:${leg.target}:${dialSid ?? 'none'}`,
    occurredAt: occurredAt(fields),
    kind: 'call.hangup',
    carrierCallId: dialSid ?? callSid,
    callSessionId: callSid,
    ourLeg: leg,
    direction: 'outbound',
    to: boundedField(fields, BOUNDS.addressLength, 'To'),
    from: boundedField(fields, BOUNDS.addressLength, 'From'),
    progress: 'ended',
    carrierStatus: status,
    answered,
    callerLeft,
    durationSeconds: duration,
    ...(!answered && { hangupCause: status }),
    endReason: DIAL_END_REASONS[status] ?? 'failed',
  };
  return { event, carrierEventType: `voice.dial.${status}` };
}

/** The voicemail's recording: the caller's leg recorded it, so the call is found by its CallSid. */
function recording(fields: FormFields): VoiceCallback {
  const callSid = requiredSid(fields, 'CallSid');
  const recordingSid = requiredSid(fields, 'RecordingSid');
  const event: CallRecordingSaved = {
    carrier: 'twilio',
    carrierEventId: `${callSid}:recording:${recordingSid}`,
    occurredAt: occurredAt(fields),
    kind: 'call.recording.saved',
    carrierCallId: callSid,
    callSessionId: callSid,
    recordingUrl: boundedField(fields, BOUNDS.urlLength, 'RecordingUrl') ?? required(fields, 'RecordingUrl'),
  };
  return { event, carrierEventType: 'voice.recording' };
}

function queryValue(query: URLSearchParams, name: string): string {
  const value = query.get(name);
  if (!value) throw new MalformedWebhook(`query parameter ${name} is required`);
  return bounded(value, BOUNDS.idLength, `query parameter ${name}`);
}

function targetIndex(query: URLSearchParams): number {
  const target = Number(queryValue(query, 'target'));
  if (!Number.isInteger(target) || target < 0 || target > 100) throw new MalformedWebhook('query parameter target must be a target index');
  return target;
}
