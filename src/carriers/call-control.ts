import type { OurLegState } from './normalized-event.js';

/**
 * What we ask a call-control carrier to do. Every command carries a `commandId`, stable per
 * intent: the same command resent after a 5xx or a transport error reuses it (the carrier then
 * does it once, inside its command_id window), and a new attempt at a target gets a new one.
 */
export type CallCommand =
  | { action: 'dial'; commandId: string; from: string; to: string; timeoutSecs: number; linkTo?: string; leg: OurLegState }
  | { action: 'answer'; commandId: string; controlId: string }
  | { action: 'bridge'; commandId: string; controlId: string; otherControlId: string }
  | { action: 'hangup'; commandId: string; controlId: string }
  | { action: 'record_start'; commandId: string; controlId: string }
  | { action: 'transcription_start'; commandId: string; controlId: string };

/**
 * The carrier's answer. `done`: it did it (a dial also says which leg it created); `refused`: a
 * 4xx, which is an answer (the retry table, docs/exactly-once.md: never retried). `unanswered`: no answer we can act
 * on (a transport failure, 408, 5xx), so the carrier may or may not have done it: the sender may
 * send it once more with the same command id while the carrier still honours that id; a 429
 * (`retryAfterMs`) may be waited out inside that window.
 */
export type CallCommandResult =
  | { outcome: 'done'; controlId?: string }
  | { outcome: 'refused'; status: number; code: string; detail: string }
  | { outcome: 'unanswered'; detail: string; retryAfterMs?: number };

export interface CallControl {
  /** How long the carrier ignores a repeated command_id (does the command once): nothing is resent later. */
  readonly commandIdWindowMs: number;
  send(command: CallCommand): Promise<CallCommandResult>;
}
