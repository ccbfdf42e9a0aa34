import type { OurLegState } from './normalized-event.js';

/**
 * What a carrier that asks us "what now?" during a call (Twilio Voice) is told in the answer to
 * that very request, in our words; the adapter renders it in the carrier's markup. Telnyx is told
 * by commands instead (call-control.ts).
 */
export type CallReply =
  /** Ring one target; the carrier reports back to the dial callback named by `leg`. */
  | { kind: 'dial'; to: string; timeoutSecs: number; leg: OurLegState }
  /** Answer the caller and record a voicemail; the recording is reported for `callId`. */
  | { kind: 'voicemail'; callId: string }
  /** End the call (no one answered, or the bridged call is over). */
  | { kind: 'hangup' }
  /** Refuse the call without answering it (no voice settings, not our number). */
  | { kind: 'reject' }
  /** Nothing to do (status reports): the carrier carries on as it was. */
  | { kind: 'nothing' };

/** A carrier whose call callbacks are answered with instructions, and how it writes them. */
export interface CallReplyWriter {
  readonly contentType: string;
  render(reply: CallReply): string;
}
