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
 * The most a claimed send may wait between the claim's decision and its request to the carrier:
 * past it, the send is given back (queued again, paced like any send) instead of made. The burst
 * bound holds at decision time, by the database clock; a process that stalls after its claims
 * were decided (descheduled on a loaded machine, while the statements it had in flight went on
 * deciding) would otherwise send them together, and the carrier, counting arrivals, would see a
 * burst the claims never made. Half the jitter margin SEND_BURST_SECONDS leaves below a carrier's
 * second's worth; the other half is for the request's own way to the carrier.
 */
export const SEND_CLAIM_MAX_AGE_MS = 250;

/**
 * Whether a claim is too old to send: both the time since this process asked for it (its own
 * clock: skew-free, but it counts a wait for the number's row too) and the time since the
 * database decided it (the two clocks: exact on one machine) are past SEND_CLAIM_MAX_AGE_MS. A
 * wait for the row alone, or a clock skewed either way alone, never gives a send back: only a
 * stall after the decision, which both see.
 */
export function claimTooOld(askedAtMs: number, decidedAt: Date, nowMs = Date.now()): boolean {
  return Math.min(nowMs - askedAtMs, nowMs - decidedAt.getTime()) > SEND_CLAIM_MAX_AGE_MS;
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
 * SQL timestamptz: when a send claimed at `clock` for slot `slot` counts as sent: at its slot when
 * it is claimed at most SEND_LATENESS_TOLERANCE_SECONDS (and at most a quarter of the number's
 * `spacing`, an interval) after it, else that much before the claim. A slot still ahead (a send
 * the burst allowance lets go early) counts at the slot too: never sooner than the place it held,
 * so the sends' counted times keep the slots' order and spacing. The quarter keeps a fast number
 * (20/s: 50 ms apart) from counting a late send a whole spacing early, which let two sends go out
 * together and a carrier's bucket answer 429.
 */
export function countedSendTimeSql(clock: string, slot: string, spacing: string): string {
  return `greatest(coalesce(${slot}, ${clock}), ${clock} - least(make_interval(secs => ${SEND_LATENESS_TOLERANCE_SECONDS}), ${spacing} / 4))`;
}
