import type { KeyObject } from 'node:crypto';
import type { CarrierWebhook } from '../webhook-series.js';
import type { Hangup } from './call-hangups.js';
import type { CallLeg, Recording } from './call-leg.js';
import { telnyxWebhook } from './telnyx-sandbox.js';

/**
 * Telnyx Call Control webhooks of one leg, shaped as the shared fixtures (call.initiated,
 * call.answered, call.hangup) and the Telnyx API v2 docs for the others. Each echoes the leg's
 * client_state as it is at that moment; `occurred_at` is when the event is built.
 */

function legIds(leg: CallLeg) {
  return {
    call_control_id: leg.callControlId,
    connection_id: leg.connectionId,
    call_leg_id: leg.callLegId,
    call_session_id: leg.callSessionId,
    // Telnyx specifies client_state as a string: a leg without one has none, never null.
    ...(leg.clientState != null && { client_state: leg.clientState }),
  };
}

function legParties(leg: CallLeg) {
  return { ...legIds(leg), from: leg.from, to: leg.to };
}

const startTime = (leg: CallLeg) => leg.startedAt.toISOString();

export function callInitiated(leg: CallLeg) {
  return { ...legParties(leg), direction: leg.direction, state: leg.direction === 'incoming' ? 'parked' : 'bridging', start_time: startTime(leg) };
}

export function callAnswered(leg: CallLeg) {
  return { ...legParties(leg), direction: leg.direction, state: 'answered', start_time: startTime(leg) };
}

export function callBridged(leg: CallLeg) {
  return legParties(leg);
}

export function callHangup(leg: CallLeg, hangup: Hangup) {
  return {
    ...legParties(leg),
    start_time: startTime(leg),
    state: 'hangup',
    hangup_cause: hangup.cause,
    hangup_source: hangup.source,
    sip_hangup_cause: hangup.sip,
  };
}

export function recordingUrls(recording: Recording) {
  const base = `${recording.urlBase}/sandbox/recordings/${recording.id}`;
  return { mp3: `${base}.mp3`, wav: `${base}.wav` };
}

export function callRecordingSaved(leg: CallLeg, recording: Recording, endedAt: Date) {
  const urls = recordingUrls(recording);
  return {
    ...legIds(leg),
    recording_id: recording.id,
    channels: recording.channels,
    recording_started_at: recording.startedAt.toISOString(),
    recording_ended_at: endedAt.toISOString(),
    recording_urls: urls,
    public_recording_urls: urls,
  };
}

export function callTranscription(leg: CallLeg, transcript: string, isFinal: boolean, confidence: number) {
  return { ...legIds(leg), transcription_data: { transcript, is_final: isFinal, confidence } };
}

/** The signed webhook of `eventType` for `leg` with that payload. */
export function callWebhook(eventType: string, leg: CallLeg, payload: Record<string, unknown>, privateKey: KeyObject): CarrierWebhook {
  return telnyxWebhook(eventType, leg.webhookUrl, 0, privateKey, payload);
}
