import { randomUUID } from 'node:crypto';
import type { CallLeg } from './call-leg.js';
import { callRecordingSaved, callTranscription } from './telnyx-call-events.js';

/** A `call.transcription` fragment every this many ms of call time while the call lasts. */
export const FRAGMENT_EVERY_MS = 300;
/** Recordings remembered for GET /sandbox/recordings (oldest forgotten first). */
const MAX_RECORDINGS = 100_000;
export const DEFAULT_TRANSCRIPT = ['Hello, thanks for calling.', 'Sure, I can help you with that.', 'Talk to you soon, goodbye.'];

/** What media needs of the call control that owns it: call time, a leg's events, the other legs. */
export interface MediaCalls {
  /** Runs `fn` after `callMs` of call time unless the leg has ended by then. */
  schedule(leg: CallLeg, callMs: number, fn: () => void): void;
  /** Sends one of the leg's events. */
  emit(leg: CallLeg, eventType: string, payload: Record<string, unknown>): void;
  find(callControlId: string): CallLeg | undefined;
}

/**
 * What record_start and transcription_start do to a leg: a recording saved (`call.recording.saved`)
 * when the leg ends or its max_length is reached; final `call.transcription` fragments of what is
 * said on the call while it lasts.
 */
export class CallMedia {
  /** Saved recordings: id → length in ms (what GET /sandbox/recordings serves). */
  private readonly recordings = new Map<string, number>();

  constructor(private readonly control: MediaCalls) {}

  /** `maxLengthMs` (call time) > 0 stops the recording by itself, as Telnyx's max_length does. */
  startRecording(leg: CallLeg, channels: 'single' | 'dual', maxLengthMs: number, urlBase: string): void {
    leg.recording = { id: randomUUID(), startedAt: new Date(), channels, urlBase };
    if (maxLengthMs > 0) this.control.schedule(leg, maxLengthMs, () => this.saveRecording(leg));
  }

  /** Length in ms of a saved recording, undefined if unknown. */
  recordingMs(id: string): number | undefined {
    return this.recordings.get(id);
  }

  /** After the leg's `call.hangup`: its recording, if one runs, is saved. */
  legEnded(leg: CallLeg): void {
    leg.transcribing = false;
    this.saveRecording(leg);
  }

  startTranscription(leg: CallLeg): void {
    leg.transcribing = true;
    const fragment = (i: number) => () => {
      const lines = this.transcriptOf(leg);
      if (!leg.transcribing || i >= lines.length) return;
      this.control.emit(leg, 'call.transcription', callTranscription(leg, lines[i]!, true, Number((0.97 - (i % 4) * 0.03).toFixed(2))));
      this.control.schedule(leg, FRAGMENT_EVERY_MS, fragment(i + 1));
    };
    this.control.schedule(leg, FRAGMENT_EVERY_MS, fragment(0));
  }

  private saveRecording(leg: CallLeg): void {
    const recording = leg.recording;
    if (!recording) return;
    leg.recording = undefined;
    const endedAt = new Date();
    this.recordings.set(recording.id, endedAt.getTime() - recording.startedAt.getTime());
    if (this.recordings.size > MAX_RECORDINGS) this.recordings.delete(this.recordings.keys().next().value!);
    this.control.emit(leg, 'call.recording.saved', callRecordingSaved(leg, recording, endedAt));
  }

  /** What is said: the leg's own transcript, else its bridged partner's (a target's), else a stock one. */
  private transcriptOf(leg: CallLeg): string[] {
    const partner = leg.bridgedWith === undefined ? undefined : this.control.find(leg.bridgedWith);
    return leg.transcript ?? partner?.transcript ?? DEFAULT_TRANSCRIPT;
  }
}
