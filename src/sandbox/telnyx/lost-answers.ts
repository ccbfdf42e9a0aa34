import { BehaviourError } from './call-behaviour.js';
import { CALL_ACTIONS } from './call-action-names.js';

/** The commands whose answers can be lost: a dial and every action on a leg. */
const LOSABLE_COMMANDS: readonly string[] = ['dial', ...CALL_ACTIONS];
const MAX_TIMES = 100_000;

/** How the next `times` answers to a command are lost: the connection closed unanswered (status null), or a 5xx. */
export interface LostAnswer {
  times: number;
  status: number | null;
}

/**
 * `lose_command_answers` (POST /sandbox/calls/behaviours): the sandbox carries the command out (a
 * dial creates its leg, a hangup hangs up) and then loses the answer, as a carrier behind a
 * failing gateway does. `{"dial":1}` closes the connection with no answer once; `{"bridge":{"times":2,"status":504}}`
 * answers 504 twice. null removes a command's entry.
 */
export function parseLostAnswers(value: unknown): Map<string, LostAnswer | null> {
  const where = 'lose_command_answers';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new BehaviourError(`${where} must be an object: {"dial":1,"bridge":{"times":1,"status":504}}`);
  const parsed = new Map<string, LostAnswer | null>();
  for (const [command, spec] of Object.entries(value)) {
    if (!LOSABLE_COMMANDS.includes(command)) throw new BehaviourError(`${where}.${command}: not a command (known: ${LOSABLE_COMMANDS.join(', ')})`);
    parsed.set(command, spec === null ? null : lostAnswer(spec, `${where}.${command}`));
  }
  return parsed;
}

function lostAnswer(spec: unknown, where: string): LostAnswer {
  const times = (v: unknown) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_TIMES) throw new BehaviourError(`${where} times must be a whole number from 1 to ${MAX_TIMES}`);
    return v;
  };
  if (typeof spec === 'number') return { times: times(spec), status: null };
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw new BehaviourError(`${where} must be a number of times or {"times","status"?}`);
  const { times: n, status, ...rest } = spec as Record<string, unknown>;
  if (Object.keys(rest).length) throw new BehaviourError(`${where}: unknown field ${Object.keys(rest).join(', ')} (known: times, status)`);
  if (status !== undefined && (typeof status !== 'number' || !Number.isInteger(status) || status < 500 || status > 599)) throw new BehaviourError(`${where}.status must be a whole number from 500 to 599`);
  return { times: times(n), status: (status as number | undefined) ?? null };
}

/** The answers still to lose, per command; each carried-out command takes one. */
export class LostAnswerBook {
  private readonly pending = new Map<string, LostAnswer>();

  apply(changes: Map<string, LostAnswer | null>): void {
    for (const [command, lost] of changes) {
      if (lost) this.pending.set(command, { ...lost });
      else this.pending.delete(command);
    }
  }

  clear(): void {
    this.pending.clear();
  }

  /** How this command's answer is lost, or undefined: answer it. */
  take(command: string): { status: number | null } | undefined {
    const lost = this.pending.get(command);
    if (!lost) return undefined;
    if (--lost.times === 0) this.pending.delete(command);
    return { status: lost.status };
  }

  view(): Record<string, { times: number; status?: number }> {
    return Object.fromEntries([...this.pending].map(([command, { times, status }]) => [command, { times, ...(status !== null && { status }) }]));
  }
}
