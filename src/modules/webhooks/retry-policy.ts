/** When the next attempt of a delivery happens, from WEBHOOK_RETRY_SCHEDULE and the customer's answer. */

const JITTER = 0.2;

/** `seconds` ± 20%, in milliseconds. */
export function jittered(seconds: number, random: () => number = Math.random): number {
  return Math.round(seconds * 1000 * (1 - JITTER + 2 * JITTER * random()));
}

/**
 * Retry-After (seconds or an HTTP date) clamped to [scheduled, 2 × scheduled]: a customer may slow
 * us down, but neither hurry us past the schedule nor stall the delivery indefinitely.
 */
export function honourRetryAfter(scheduledMs: number, retryAfter: string | undefined, now = Date.now()): number {
  if (!retryAfter) return scheduledMs;
  let askedMs: number;
  if (/^\d+$/.test(retryAfter.trim())) askedMs = Number(retryAfter.trim()) * 1000;
  else {
    const date = Date.parse(retryAfter);
    if (Number.isNaN(date)) return scheduledMs;
    askedMs = date - now;
  }
  return Math.min(Math.max(askedMs, scheduledMs), 2 * scheduledMs);
}

/** The delay before attempt `indexInRound` (0-based) of a round, or undefined when the round is over. */
export function scheduledDelayMs(schedule: number[], indexInRound: number, random?: () => number): number | undefined {
  if (indexInRound >= schedule.length) return undefined;
  return jittered(schedule[indexInRound], random);
}
