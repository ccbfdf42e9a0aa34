/**
 * How soon a run of a lane gets the lane's next free connection, a person on the line first:
 * `now` (someone picked up and hears silence: a leg's answer and the join's commands), `soon`
 * (a call in progress: its other events, a hand-off's dial, hangups, join timeouts), `next` (a
 * new call's first dial: decided, only its send is left), `new` (a new call's first event: the
 * caller's call.initiated, which decides that dial; let in at its lane's pace, NewWorkPace),
 * `later` (the rest: an inbound SMS's processing). Each in arrival order.
 */
export type Urgency = 'now' | 'soon' | 'next' | 'new' | 'later';
export const URGENCIES: readonly Urgency[] = ['now', 'soon', 'next', 'new', 'later'];

/** The most urgent of `urgencies` (Urgency's order); `later` for none. */
export function mostUrgent(urgencies: readonly Urgency[]): Urgency {
  return URGENCIES.find((level) => urgencies.includes(level)) ?? 'later';
}
