/** Sender pacing: how the dispatch claim spaces a number's sends (rates: ../numbers/send-rates.ts). */
/**
 * The most a number sends at once, in seconds of its rate: 0.8 s worth (at least one message).
 * Sends claimed late (jobs held up, several slots due together) never go out faster than that;
 * carriers that take `rate` a second allow a second's worth, and the rest is margin for jitter.
 */
export const SEND_BURST_SECONDS = 0.8;

/** SQL interval: how far ahead of now a number's paced sends may reach and still send one more (GCRA's tolerance). */
export function burstToleranceSql(rate: string): string {
  return `make_interval(secs => greatest(0, ${SEND_BURST_SECONDS} - 1.0 / ${rate})::float8)`;
}
