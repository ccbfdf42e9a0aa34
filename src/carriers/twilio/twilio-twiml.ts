import { Injectable } from '@nestjs/common';
import VoiceResponse from 'twilio/lib/twiml/VoiceResponse.js';
import { AppConfig } from '../../platform/config/app-config.js';
import type { CallReply, CallReplyWriter } from '../call-reply.js';

/** Longest voicemail we ask Twilio to record, in seconds. */
const VOICEMAIL_MAX_SECONDS = 120;

/** The paths Twilio calls back on during a call (signed with PUBLIC_BASE_URL in front). */
export const TWILIO_VOICE_PATHS = {
  incoming: '/webhooks/twilio/voice',
  dial: '/webhooks/twilio/voice/dial',
  status: '/webhooks/twilio/voice/status',
  recording: '/webhooks/twilio/voice/recording',
} as const;

/** Our call replies as TwiML, built by the official `twilio` package (never by string pasting). */
@Injectable()
export class TwilioTwiml implements CallReplyWriter {
  readonly contentType = 'text/xml';

  constructor(private readonly config: AppConfig) {}

  render(reply: CallReply): string {
    const response = new VoiceResponse();
    const base = this.config.publicBaseUrl;
    switch (reply.kind) {
      case 'dial': {
        // answerOnBridge: the caller hears ringing and is not answered (nor billed) until a target picks up.
        const action = `${base}${TWILIO_VOICE_PATHS.dial}?call=${encodeURIComponent(reply.leg.callId)}&target=${reply.leg.target}`;
        response.dial({ timeout: reply.timeoutSecs, action, answerOnBridge: true }).number(reply.to);
        break;
      }
      case 'voicemail':
        response.record({ action: `${base}${TWILIO_VOICE_PATHS.recording}?call=${encodeURIComponent(reply.callId)}`, maxLength: VOICEMAIL_MAX_SECONDS, playBeep: true });
        break;
      case 'hangup':
        response.hangup();
        break;
      case 'reject':
        response.reject();
        break;
      case 'nothing':
        break;
    }
    return response.toString();
  }
}
