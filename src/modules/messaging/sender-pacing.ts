/** Sender pacing: how the dispatch claim spaces a number's sends (rates: ../numbers/send-rates.ts). */
/**
 * The most a number sends at once, in seconds of its rate: half a second's worth (at least one message).
 * Sends claimed late (jobs held up, several slots due together) never go out faster than that;
 * carriers that take `rate` a second allow a second's worth, and the other half is margin for
 * jitter between our claim and the carrier's clock (a loaded machine delays some sends more than others).
 */
export const SEND_BURST_SECONDS = 0.5;

/** SQL interval: how far ahead of now a number's paced sends may reach and still send one more (GCRA's tolerance). */
export function burstToleranceSql(rate: string): string {
  return `make_interval(secs => greatest(0, ${SEND_BURST_SECONDS} - 1.0 / ${rate})::float8)`;
}
