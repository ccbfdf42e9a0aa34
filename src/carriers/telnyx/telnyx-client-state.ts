import type { OurLegState } from '../normalized-event.js';

/**
 * Telnyx echoes a dial's `client_state` (base64, at most 4 KB) on every event of that leg. Ours is
 * base64 of `{"call_id","target","attempt"}`: the leg's events then say which call and which
 * ring-plan target they belong to without a lookup, so the cursor's compare-and-set takes the
 * target from the event itself, never from re-reading the row.
 */
export function encodeClientState(leg: OurLegState): string {
  return Buffer.from(JSON.stringify({ call_id: leg.callId, target: leg.target, attempt: leg.attempt })).toString('base64');
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const CALL_ID = /^call_[0-9a-z]{26}$/;

/** Our leg state, or undefined for anything else (null, not base64, not JSON, not our shape): "not ours". */
export function decodeClientState(value: unknown): OurLegState | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096 || !BASE64.test(value)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { call_id: callId, target, attempt } = parsed as Record<string, unknown>;
  if (typeof callId !== 'string' || !CALL_ID.test(callId)) return undefined;
  if (!Number.isSafeInteger(target) || (target as number) < 0 || (target as number) > 100) return undefined;
  if (!Number.isSafeInteger(attempt) || (attempt as number) < 1 || (attempt as number) > 10) return undefined;
  return { callId, target: target as number, attempt: attempt as number };
}
