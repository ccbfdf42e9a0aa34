import type { OurLegState } from './normalized-event.js';

/**
 * What we ask a call-control carrier to do. Every command carries a `commandId`, stable per
 * intent: the same command retried after a 5xx or a transport error reuses it (the carrier then
 * does it once), and a new attempt at a target gets a new one.
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
 * 4xx, which is an answer (seed 001: never retried). A 5xx or transport failure is not an answer:
 * the driver throws CarrierUnavailableError and the command is sent again with the same id.
 */
export type CallCommandResult =
  | { outcome: 'done'; controlId?: string }
  | { outcome: 'refused'; status: number; code: string; detail: string };

export interface CallControl {
  send(command: CallCommand): Promise<CallCommandResult>;
}
