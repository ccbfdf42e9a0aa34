import { randomUUID } from 'node:crypto';
import VoiceResponse from 'twilio/lib/twiml/VoiceResponse.js';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import type { TestApp } from './app.js';

export interface TwimlReply {
  status: number;
  contentType: string;
  body: string;
}

export const newCallSid = (): string => `CA${randomUUID().replace(/-/g, '')}`;

/**
 * The test plays Twilio Voice: it signs each callback with the official `twilio` package (the
 * URL Twilio would request, PUBLIC_BASE_URL + path + query, and the form fields) and reads the
 * TwiML it gets back.
 */
export class TwilioVoiceCaller {
  constructor(private readonly app: TestApp) {}

  /** POSTs a signed callback to `pathAndQuery` (e.g. `/webhooks/twilio/voice/dial?call=…&target=0`). */
  async post(pathAndQuery: string, fields: Record<string, string>, signature?: string): Promise<TwimlReply> {
    const token = this.app.config.twilioWebhookAuthToken!;
    const res = await fetch(`${this.app.url}${pathAndQuery}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': signature ?? getExpectedTwilioSignature(token, `${this.app.config.publicBaseUrl}${pathAndQuery}`, fields),
      },
      body: new URLSearchParams(fields).toString(),
    });
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() };
  }

  incoming(callSid: string, from: string, to: string, direction = 'inbound'): Promise<TwimlReply> {
    return this.post('/webhooks/twilio/voice', { CallSid: callSid, AccountSid: 'AC00000000000000000000000000000000', From: from, To: to, CallStatus: 'ringing', Direction: direction });
  }

  /** The action request of the <Dial> for `target`: how that dial ended (`callStatus`: the caller's own call then). */
  dialResult(callSid: string, callId: string, target: number, result: { status: string; dialSid?: string; duration?: number; callStatus?: string }): Promise<TwimlReply> {
    const fields: Record<string, string> = { CallSid: callSid, AccountSid: 'AC00000000000000000000000000000000', CallStatus: result.callStatus ?? 'in-progress', DialCallStatus: result.status, DialCallSid: result.dialSid ?? newCallSid() };
    if (result.duration !== undefined) fields.DialCallDuration = String(result.duration);
    return this.post(dialPath(callId, target), fields);
  }

  status(callSid: string, status: string, duration?: number): Promise<TwimlReply> {
    const fields: Record<string, string> = { CallSid: callSid, AccountSid: 'AC00000000000000000000000000000000', CallStatus: status, Direction: 'inbound' };
    if (duration !== undefined) fields.CallDuration = String(duration);
    return this.post('/webhooks/twilio/voice/status', fields);
  }

  recording(callSid: string, callId: string, url: string): Promise<TwimlReply> {
    return this.post(`/webhooks/twilio/voice/recording?call=${callId}`, { CallSid: callSid, RecordingSid: `RE${randomUUID().replace(/-/g, '')}`, RecordingUrl: url, RecordingDuration: '7', CallStatus: 'completed' });
  }
}

export const dialPath = (callId: string, target: number): string => `/webhooks/twilio/voice/dial?call=${callId}&target=${target}`;

/** TwiML as the official library writes it: what our replies must equal byte for byte. */
export const twiml = {
  dial(publicBaseUrl: string, callId: string, target: number, to: string, timeout: number): string {
    const response = new VoiceResponse();
    response.dial({ timeout, action: `${publicBaseUrl}${dialPath(callId, target)}`, answerOnBridge: true }).number(to);
    return response.toString();
  },
  hangup(): string {
    const response = new VoiceResponse();
    response.hangup();
    return response.toString();
  },
  reject(): string {
    const response = new VoiceResponse();
    response.reject();
    return response.toString();
  },
  empty(): string {
    return new VoiceResponse().toString();
  },
  record(publicBaseUrl: string, callId: string): string {
    const response = new VoiceResponse();
    response.record({ action: `${publicBaseUrl}/webhooks/twilio/voice/recording?call=${callId}`, maxLength: 120, playBeep: true });
    return response.toString();
  },
};
