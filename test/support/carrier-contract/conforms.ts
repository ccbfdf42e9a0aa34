import type { ContractRecorder } from './contract-recorder.js';
import { ContractDivergenceError } from './divergence.js';

/** Throws, naming every divergence the recorder holds since the last check, and forgets them (so stop() reports only later ones). */
export function expectConformant(recorder: ContractRecorder, what: string): void {
  const divergences = recorder.clear();
  if (divergences.length > 0) throw new ContractDivergenceError(divergences, what);
}
