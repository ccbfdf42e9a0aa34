import { TARGET_HANGUPS, type Hangup } from './call-hangups.js';

/**
 * How a dialed number reacts, chosen per number with POST /sandbox/calls/behaviours:
 * `{"answer_after_ms":300,"talk_ms":2000}`, `{"decline":true}`, `{"busy":true}`,
 * `{"no_answer":true}`, `{"sip_503":true}` (or `{"sip_error":408}`), `{"dial_error":422}`,
 * `{"answer_then_drop":true}` (or `{"answer_after_ms":300,"drop_after_ms":50}`): answers, hangs up
 * at once, and its `call.hangup` is delivered before its `call.answered` (Telnyx does not order them).
 * Times are call time, like the app's `timeout_secs`: the time scale runs all of them faster or slower.
 */
export type TargetReaction =
  /** dropAfterMs set: the far end hangs up that soon after answering, and the leg's hangup is delivered before its answer. */
  | { kind: 'answer'; afterMs: number; talkMs: number | null; transcript: string[] | null; dropAfterMs?: number }
  | { kind: 'decline' | 'busy'; afterMs: number }
  | { kind: 'sip_error'; sip: number; afterMs: number }
  | { kind: 'no_answer' }
  | { kind: 'dial_error'; status: number };

/** One step of a number's script: used for `times` dials (null: for every later dial). */
export interface BehaviourStep {
  reaction: TargetReaction;
  times: number | null;
}

/** Unknown numbers answer after a moment and talk a while, then hang up. */
const DEFAULT_ANSWER_AFTER_MS = 300;
export const DEFAULT_REACTION: TargetReaction = { kind: 'answer', afterMs: DEFAULT_ANSWER_AFTER_MS, talkMs: 2000, transcript: null };
/** How soon a declining, busy or failing target reacts unless `after_ms` says otherwise. */
const REACT_AFTER_MS = 100;
/** Telnyx's longest call (4 h), in ms of call time. */
const MAX_MS = 14_400_000;
const MAX_TIMES = 100_000;
const MAX_TRANSCRIPT_LINES = 20;

export class BehaviourError extends Error {}

const KEYS = ['answer_after_ms', 'talk_ms', 'transcript', 'answer_then_drop', 'drop_after_ms', 'decline', 'busy', 'no_answer', 'sip_503', 'sip_error', 'dial_error', 'after_ms', 'times'];
const FLAGS = ['decline', 'busy', 'no_answer', 'sip_503'] as const;

function wholeNumber(value: unknown, where: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new BehaviourError(`${where} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

/** A transcript: what is said on a call, one `call.transcription` fragment per line. */
export function transcriptLines(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_TRANSCRIPT_LINES
    || !value.every((line) => typeof line === 'string' && line.length > 0 && line.length <= 500)) {
    throw new BehaviourError(`${where} must be 1 to ${MAX_TRANSCRIPT_LINES} non-empty strings of at most 500 characters`);
  }
  return value as string[];
}

/** The kind an object names: at most one of the flags or `sip_error` / `dial_error`; none is `answer`. */
function kindOf(obj: Record<string, unknown>, where: string): string {
  const named = [...FLAGS.filter((f) => obj[f] !== undefined), ...(['sip_error', 'dial_error'] as const).filter((k) => obj[k] !== undefined)];
  for (const flag of FLAGS) {
    if (obj[flag] !== undefined && obj[flag] !== true) throw new BehaviourError(`${where}.${flag} must be true`);
  }
  if (named.length > 1) throw new BehaviourError(`${where} names more than one behaviour: ${named.join(', ')}`);
  return named[0] ?? 'answer';
}

/** Refuses a field that makes no sense for the kind (talk_ms on a decline, ...). */
function onlyFor(obj: Record<string, unknown>, where: string, kind: string, fields: string[], kinds: string[]): void {
  for (const field of fields) {
    if (obj[field] !== undefined && !kinds.includes(kind)) throw new BehaviourError(`${where}.${field} applies only to ${kinds.join(' / ')}`);
  }
}

export function parseStep(value: unknown, where: string): BehaviourStep {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new BehaviourError(`${where} must be an object`);
  const obj = value as Record<string, unknown>;
  const unknown = Object.keys(obj).filter((k) => !KEYS.includes(k));
  if (unknown.length) throw new BehaviourError(`${where}: unknown field ${unknown.join(', ')} (known: ${KEYS.join(', ')})`);
  const kind = kindOf(obj, where);
  onlyFor(obj, where, kind, ['answer_after_ms', 'talk_ms', 'transcript', 'answer_then_drop', 'drop_after_ms'], ['answer']);
  onlyFor(obj, where, kind, ['after_ms'], ['decline', 'busy', 'sip_503', 'sip_error']);
  const afterMs = obj.after_ms === undefined ? REACT_AFTER_MS : wholeNumber(obj.after_ms, `${where}.after_ms`, 0, MAX_MS);
  const times = obj.times === undefined ? null : wholeNumber(obj.times, `${where}.times`, 1, MAX_TIMES);
  let reaction: TargetReaction;
  switch (kind) {
    case 'answer':
      reaction = {
        kind: 'answer',
        afterMs: obj.answer_after_ms === undefined ? DEFAULT_ANSWER_AFTER_MS : wholeNumber(obj.answer_after_ms, `${where}.answer_after_ms`, 0, MAX_MS),
        talkMs: obj.talk_ms === undefined ? null : wholeNumber(obj.talk_ms, `${where}.talk_ms`, 0, MAX_MS),
        transcript: obj.transcript === undefined ? null : transcriptLines(obj.transcript, `${where}.transcript`),
        ...dropOf(obj, where),
      };
      break;
    case 'sip_503':
      reaction = { kind: 'sip_error', sip: 503, afterMs };
      break;
    case 'sip_error':
      reaction = { kind: 'sip_error', sip: wholeNumber(obj.sip_error, `${where}.sip_error`, 400, 699), afterMs };
      break;
    case 'dial_error':
      reaction = { kind: 'dial_error', status: wholeNumber(obj.dial_error, `${where}.dial_error`, 400, 599) };
      break;
    case 'no_answer':
      reaction = { kind: 'no_answer' };
      break;
    default:
      reaction = { kind: kind as 'decline' | 'busy', afterMs };
  }
  return { reaction, times };
}

/** `answer_then_drop` (at once) or `drop_after_ms`: the answer that hangs up, delivered hangup first. */
function dropOf(obj: Record<string, unknown>, where: string): { dropAfterMs?: number } {
  if (obj.answer_then_drop !== undefined && obj.answer_then_drop !== true) throw new BehaviourError(`${where}.answer_then_drop must be true`);
  if (obj.answer_then_drop === undefined && obj.drop_after_ms === undefined) return {};
  if (obj.talk_ms !== undefined) throw new BehaviourError(`${where}: talk_ms and answer_then_drop / drop_after_ms exclude each other`);
  return { dropAfterMs: obj.drop_after_ms === undefined ? 0 : wholeNumber(obj.drop_after_ms, `${where}.drop_after_ms`, 0, MAX_MS) };
}

/** One behaviour object, or a script: an array of them used in order (`times` each). */
export function parseSteps(value: unknown, where: string): BehaviourStep[] {
  const items = Array.isArray(value) ? value : [value];
  if (items.length === 0 || items.length > 20) throw new BehaviourError(`${where} must be a behaviour or a list of 1 to 20`);
  return items.map((item, i) => parseStep(item, Array.isArray(value) ? `${where}[${i}]` : where));
}

/** The JSON a reaction is written in (what GET /sandbox/calls/behaviours shows). */
export function formatReaction(reaction: TargetReaction): Record<string, unknown> {
  switch (reaction.kind) {
    case 'answer':
      return {
        answer_after_ms: reaction.afterMs,
        ...(reaction.talkMs !== null && { talk_ms: reaction.talkMs }),
        ...(reaction.dropAfterMs !== undefined && { drop_after_ms: reaction.dropAfterMs }),
        ...(reaction.transcript && { transcript: reaction.transcript }),
      };
    case 'sip_error':
      return { sip_error: reaction.sip, after_ms: reaction.afterMs };
    case 'dial_error':
      return { dial_error: reaction.status };
    case 'no_answer':
      return { no_answer: true };
    default:
      return { [reaction.kind]: true, after_ms: reaction.afterMs };
  }
}

/**
 * Every number's script and the default. `take` is called once per new dial and consumes one use
 * of a counted step; once a number's steps are used up, it behaves as the default.
 */
export class BehaviourBook {
  private readonly scripts = new Map<string, BehaviourStep[]>();
  private fallback: TargetReaction = DEFAULT_REACTION;

  set(number: string, steps: BehaviourStep[]): void {
    this.scripts.set(number, steps.map((s) => ({ ...s })));
  }

  remove(number: string): void {
    this.scripts.delete(number);
  }

  setDefault(reaction: TargetReaction): void {
    this.fallback = reaction;
  }

  clear(): void {
    this.scripts.clear();
    this.fallback = DEFAULT_REACTION;
  }

  take(number: string): TargetReaction {
    const steps = this.scripts.get(number);
    const step = steps?.[0];
    if (!steps || !step) return this.fallback;
    if (step.times !== null && --step.times === 0) steps.shift();
    return step.reaction;
  }

  view(): { default: Record<string, unknown>; numbers: Record<string, Record<string, unknown>[]> } {
    const numbers: Record<string, Record<string, unknown>[]> = {};
    for (const [number, steps] of this.scripts) {
      numbers[number] = steps.map((s) => ({ ...formatReaction(s.reaction), ...(s.times !== null && { times: s.times }) }));
    }
    return { default: formatReaction(this.fallback), numbers };
  }
}

/**
 * What a dialed leg does on its own: answer at `at` ms (then hang up `talkMs` later; `hangupFirst`:
 * its events from the answer on are delivered only after its hangup), or end at `at` ms with `hangup`.
 */
export type LegPlan =
  | { at: number; then: 'answer'; talkMs: number | null; hangupFirst?: true }
  | { at: number; then: 'hangup'; hangup: Hangup };

/** The plan (in call time) of a leg dialed with this reaction and a ring timeout of `timeoutMs`. */
export function planDialedLeg(reaction: Exclude<TargetReaction, { kind: 'dial_error' }>, timeoutMs: number): LegPlan {
  const timeout: LegPlan = { at: timeoutMs, then: 'hangup', hangup: TARGET_HANGUPS.timeout };
  switch (reaction.kind) {
    case 'no_answer':
      return timeout;
    case 'answer':
      if (reaction.afterMs >= timeoutMs) return timeout;
      return reaction.dropAfterMs === undefined
        ? { at: reaction.afterMs, then: 'answer', talkMs: reaction.talkMs }
        : { at: reaction.afterMs, then: 'answer', talkMs: reaction.dropAfterMs, hangupFirst: true };
    case 'sip_error':
      return reaction.afterMs < timeoutMs ? { at: reaction.afterMs, then: 'hangup', hangup: { ...TARGET_HANGUPS.sip_error, sip: String(reaction.sip) } } : timeout;
    default:
      return reaction.afterMs < timeoutMs ? { at: reaction.afterMs, then: 'hangup', hangup: TARGET_HANGUPS[reaction.kind] } : timeout;
  }
}
