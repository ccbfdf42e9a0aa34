import type { CallEndReason, OurLegState } from '../../carriers/normalized-event.js';

export const DEFAULT_TIMEOUT_SECS = 20;
export const FALLBACK_ACTIONS = ['hangup', 'voicemail', 'forward'] as const;
export type FallbackAction = (typeof FALLBACK_ACTIONS)[number];

export interface RingTarget {
  to: string;
  timeout_secs: number;
}

export interface RingFallback {
  action: FallbackAction;
  to?: string;
}

/** A number's voice settings as stored and returned (`voice` on the phone number). */
export interface VoiceSettings {
  ring_plan: { targets: RingTarget[]; fallback: RingFallback };
  transcribe: boolean;
}

/**
 * A ring plan as copied onto one call, with its cursor. `next` is the index of the target after
 * the one ringing now (the leg ringing is target `next - 1`, try `attempt`); the forward target,
 * when the fallback forwards, has index `targets.length`. The whole document is the value the
 * cursor's compare-and-set compares: it changes only by that statement.
 */
export interface RingPlanState {
  targets: RingTarget[];
  fallback: RingFallback;
  next: number;
  attempt: number;
  /** Numbers that declined (busy, rejected): never dialed again on this call. */
  declined: string[];
  /** `targets` while the plan dials; `forward` while the forward target rings; then the fallback that ran. */
  phase: 'targets' | 'forward' | 'voicemail' | 'hangup';
}

/** Why a leg stopped ringing: its hangup's reason, a dial the carrier refused (4xx), or the join timeout. */
export type LegEnd = CallEndReason | 'dial_refused' | 'join_timeout';

/** What the plan does next once it holds the turn. */
export type RingStep =
  | { kind: 'dial'; leg: Omit<OurLegState, 'callId'>; to: string; timeoutSecs: number }
  | { kind: 'voicemail' }
  | { kind: 'hangup' };

export interface RingDecision {
  /** The plan after this step: the value the compare-and-set writes. */
  plan: RingPlanState;
  step: RingStep;
}

/** The plan of a new call and its first dial (target 0). */
export function startPlan(settings: VoiceSettings): RingDecision {
  const { targets, fallback } = settings.ring_plan;
  const plan: RingPlanState = { targets, fallback, next: 0, attempt: 1, declined: [], phase: 'targets' };
  return dialFrom(plan, 0) ?? fallbackStep(plan);
}

/**
 * The leg for `leg.target`, try `leg.attempt`, stopped ringing: the plan's next step, or
 * undefined when it is not that leg's turn (a late or repeated hangup of an earlier leg, or the
 * plan already ran its fallback). Pure: the caller writes `plan` by compare-and-set.
 *
 * The retry rule: a target that did not answer for a reason worth one more try (SIP 408, 503 or
 * 504) is dialed once more; a target that declined is never dialed again; any other end moves on
 * to the next target; past the last target comes the fallback.
 */
export function afterLegEnded(plan: RingPlanState, leg: Omit<OurLegState, 'callId'>, end: LegEnd): RingDecision | undefined {
  const ringing = plan.phase === 'targets' || plan.phase === 'forward';
  if (!ringing || plan.next !== leg.target + 1 || plan.attempt !== leg.attempt) return undefined;
  const to = targetAt(plan, leg.target);
  if (end === 'retryable' && leg.attempt === 1 && to) {
    return { plan: { ...plan, attempt: 2 }, step: { kind: 'dial', leg: { target: leg.target, attempt: 2 }, to, timeoutSecs: timeoutAt(plan, leg.target) } };
  }
  const declined = end === 'declined' && to && !plan.declined.includes(to) ? [...plan.declined, to] : plan.declined;
  const moved = { ...plan, declined };
  if (plan.phase === 'forward') return { plan: { ...moved, phase: 'hangup' }, step: { kind: 'hangup' } };
  return dialFrom(moved, leg.target + 1) ?? fallbackStep(moved);
}

/** The first target from `index` on that has not declined, as a dial. */
function dialFrom(plan: RingPlanState, index: number): RingDecision | undefined {
  for (let i = index; i < plan.targets.length; i++) {
    const target = plan.targets[i];
    if (plan.declined.includes(target.to)) continue;
    return { plan: { ...plan, next: i + 1, attempt: 1 }, step: { kind: 'dial', leg: { target: i, attempt: 1 }, to: target.to, timeoutSecs: target.timeout_secs } };
  }
  return undefined;
}

function fallbackStep(plan: RingPlanState): RingDecision {
  const { action, to } = plan.fallback;
  if (action === 'forward' && to && !plan.declined.includes(to)) {
    const index = plan.targets.length;
    return { plan: { ...plan, next: index + 1, attempt: 1, phase: 'forward' }, step: { kind: 'dial', leg: { target: index, attempt: 1 }, to, timeoutSecs: DEFAULT_TIMEOUT_SECS } };
  }
  if (action === 'voicemail') return { plan: { ...plan, phase: 'voicemail' }, step: { kind: 'voicemail' } };
  return { plan: { ...plan, phase: 'hangup' }, step: { kind: 'hangup' } };
}

/** The number target `index` dials (the forward target past the list). */
export function targetAt(plan: Pick<RingPlanState, 'targets' | 'fallback'>, index: number): string | undefined {
  return index < plan.targets.length ? plan.targets[index].to : index === plan.targets.length ? plan.fallback.to : undefined;
}

function timeoutAt(plan: RingPlanState, index: number): number {
  return index < plan.targets.length ? plan.targets[index].timeout_secs : DEFAULT_TIMEOUT_SECS;
}
