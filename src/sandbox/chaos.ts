/**
 * Chaos knobs of the carrier sandbox, written `duplicate=3,resign,early_receipt,contradict,
 * reorder,delay_ms=200,fail_rate=0.3,reject` in SANDBOX_CHAOS, POST /sandbox/chaos or the
 * `x-sandbox-chaos` header of one send / inbound request (the header's knobs override the others).
 */
export interface Chaos {
  /** Every webhook is delivered this many times in all (1 = once). */
  duplicate: number;
  /** Every second extra copy carries a new event id (re-signed) instead of repeating the same one. */
  resign: boolean;
  /** The webhooks of a send are delivered before its HTTP response is written. */
  earlyReceipt: boolean;
  /** 1 s after the terminal `delivered` receipt, a `delivery_failed` one for the same message. */
  contradict: boolean;
  /** The deliveries of one series go out in a random order. */
  reorder: boolean;
  /** Each delivery waits a random 0..delay_ms first. */
  delayMs: number;
  /** Share of send-API calls that fail: 500, 503 or a timeout (accepted, but the answer never comes). */
  failRate: number;
  /** Share of send-API calls refused with a 4xx (`reject` alone means all of them). */
  rejectRate: number;
}

export const NO_CHAOS: Chaos = Object.freeze({
  duplicate: 1, resign: false, earlyReceipt: false, contradict: false, reorder: false, delayMs: 0, failRate: 0, rejectRate: 0,
});

/** Upper bounds: the sandbox never holds a timer or multiplies traffic beyond these. */
export const MAX_DUPLICATE = 50;
export const MAX_DELAY_MS = 10_000;

export class ChaosSyntaxError extends Error {}

type Knob = (chaos: Chaos, value: string | undefined) => void;

function flag(set: (c: Chaos) => void): Knob {
  return (chaos, value) => {
    if (value !== undefined && value !== '1' && value !== '0') throw new ChaosSyntaxError('takes no value (or 0/1)');
    if (value !== '0') set(chaos);
  };
}

function number(min: number, max: number, integer: boolean, set: (c: Chaos, n: number) => void): Knob {
  return (chaos, value) => {
    const n = Number(value);
    if (value === undefined || value === '' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      throw new ChaosSyntaxError(`needs ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
    }
    set(chaos, n);
  };
}

const KNOBS: Record<string, Knob> = {
  duplicate: number(1, MAX_DUPLICATE, true, (c, n) => (c.duplicate = n)),
  resign: flag((c) => (c.resign = true)),
  early_receipt: flag((c) => (c.earlyReceipt = true)),
  contradict: flag((c) => (c.contradict = true)),
  reorder: flag((c) => (c.reorder = true)),
  delay_ms: number(0, MAX_DELAY_MS, true, (c, n) => (c.delayMs = n)),
  fail_rate: number(0, 1, false, (c, n) => (c.failRate = n)),
  reject: flag((c) => (c.rejectRate = 1)),
  reject_rate: number(0, 1, false, (c, n) => (c.rejectRate = n)),
};

/** Applies `spec` on top of `base`; throws ChaosSyntaxError naming the bad knob. `off` or `none` resets. */
export function parseChaos(spec: string | undefined, base: Chaos = NO_CHAOS): Chaos {
  const chaos = { ...base };
  for (const part of (spec ?? '').split(',').map((p) => p.trim()).filter(Boolean)) {
    const [name, value] = part.split('=', 2) as [string, string | undefined];
    if (name === 'off' || name === 'none') {
      Object.assign(chaos, NO_CHAOS);
      continue;
    }
    const knob = KNOBS[name];
    if (!knob) throw new ChaosSyntaxError(`unknown chaos knob "${name}" (known: ${Object.keys(KNOBS).join(', ')}, off)`);
    try {
      knob(chaos, value);
    } catch (err) {
      throw new ChaosSyntaxError(`chaos knob ${name}: ${(err as Error).message}`);
    }
  }
  return chaos;
}

/** The canonical spec of a setting (what GET /sandbox/chaos shows). */
export function formatChaos(chaos: Chaos): string {
  const parts: string[] = [];
  if (chaos.duplicate !== 1) parts.push(`duplicate=${chaos.duplicate}`);
  if (chaos.resign) parts.push('resign');
  if (chaos.earlyReceipt) parts.push('early_receipt');
  if (chaos.contradict) parts.push('contradict');
  if (chaos.reorder) parts.push('reorder');
  if (chaos.delayMs) parts.push(`delay_ms=${chaos.delayMs}`);
  if (chaos.failRate) parts.push(`fail_rate=${chaos.failRate}`);
  if (chaos.rejectRate === 1) parts.push('reject');
  else if (chaos.rejectRate) parts.push(`reject_rate=${chaos.rejectRate}`);
  return parts.join(',') || 'off';
}

/** The failure a send-API call gets under fail_rate / reject_rate, if any. */
export type SendFault = 'reject' | '500' | '503' | 'timeout';

export function pickSendFault(chaos: Chaos, random: () => number = Math.random): SendFault | undefined {
  if (chaos.rejectRate > 0 && random() < chaos.rejectRate) return 'reject';
  if (chaos.failRate > 0 && random() < chaos.failRate) return (['500', '503', 'timeout'] as const)[Math.floor(random() * 3)];
  return undefined;
}

export function shuffle<T>(items: T[], random: () => number = Math.random): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
