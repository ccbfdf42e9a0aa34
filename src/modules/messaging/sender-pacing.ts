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

/**
 * How late after its slot a send may be claimed and still be counted as sent at its slot. A slot's
 * job reaches a worker some milliseconds after the slot (the relay hands it over once due, then
 * Redis, then the worker): counted at the claim's own time instead, every such delay would push
 * the number's next send back by as much, and a next send whose job happened to be quicker would
 * find no room and lose its place. Counting it at most this much earlier than the claim keeps
 * sends `segments / rate` apart less this at worst, and never more of them in any window than the
 * rate (with the burst) allows.
 */
export const SEND_LATENESS_TOLERANCE_SECONDS = 0.05;

/**
 * SQL timestamptz: when a send claimed at `clock` for slot `slot` counts as sent: at most
 * SEND_LATENESS_TOLERANCE_SECONDS, and at most a quarter of the number's `spacing` (an interval),
 * before the claim. The quarter keeps a fast number (20/s: 50 ms apart) from counting a late send a
 * whole spacing early, which let two sends go out together and a carrier's bucket answer 429.
 */
export function countedSendTimeSql(clock: string, slot: string, spacing: string): string {
  return `least(${clock}, greatest(${slot}, ${clock} - least(make_interval(secs => ${SEND_LATENESS_TOLERANCE_SECONDS}), ${spacing} / 4)))`;
}
