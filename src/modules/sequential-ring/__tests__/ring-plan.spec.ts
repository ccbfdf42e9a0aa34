import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { afterLegEnded, startPlan, type LegEnd, type RingPlanState, type VoiceSettings } from '../ring-plan.js';

const settings = (targets: string[], fallback: VoiceSettings['ring_plan']['fallback'] = { action: 'hangup' }): VoiceSettings => ({
  ring_plan: { targets: targets.map((to) => ({ to, timeout_secs: 20 })), fallback },
  transcribe: false,
});

describe('ring plan policy', () => {
  it('starts at target 0', () => {
    const { plan, step } = startPlan(settings(['+1A', '+1B']));
    expect(step).toEqual({ kind: 'dial', leg: { target: 0, attempt: 1 }, to: '+1A', timeoutSecs: 20 });
    expect(plan).toMatchObject({ next: 1, attempt: 1, phase: 'targets', declined: [] });
  });

  it('moves on from the leg that rang; a report of any other leg or try is not its turn', () => {
    const { plan } = startPlan(settings(['+1A', '+1B', '+1C']));
    const second = afterLegEnded(plan, { target: 0, attempt: 1 }, 'no_answer')!;
    expect(second.step).toMatchObject({ kind: 'dial', leg: { target: 1, attempt: 1 }, to: '+1B' });
    expect(afterLegEnded(second.plan, { target: 0, attempt: 1 }, 'no_answer')).toBeUndefined();
    expect(afterLegEnded(second.plan, { target: 1, attempt: 2 }, 'no_answer')).toBeUndefined();
  });

  it('redials once on SIP 408/503/504, then moves on', () => {
    const { plan } = startPlan(settings(['+1A', '+1B']));
    const redial = afterLegEnded(plan, { target: 0, attempt: 1 }, 'retryable')!;
    expect(redial.step).toMatchObject({ kind: 'dial', leg: { target: 0, attempt: 2 }, to: '+1A' });
    const next = afterLegEnded(redial.plan, { target: 0, attempt: 2 }, 'retryable')!;
    expect(next.step).toMatchObject({ kind: 'dial', leg: { target: 1, attempt: 1 } });
  });

  it('never dials a declined number again, not as a later target nor as the forward target', () => {
    const { plan } = startPlan(settings(['+1A', '+1B', '+1A'], { action: 'forward', to: '+1A' }));
    const afterDecline = afterLegEnded(plan, { target: 0, attempt: 1 }, 'declined')!;
    expect(afterDecline.plan.declined).toEqual(['+1A']);
    const end = afterLegEnded(afterDecline.plan, { target: 1, attempt: 1 }, 'no_answer')!;
    expect(end.step).toEqual({ kind: 'hangup' });
  });

  it('runs each fallback once: forward dials one last target, voicemail and hangup end the plan', () => {
    const forward = startPlan(settings(['+1A'], { action: 'forward', to: '+1F' }));
    const dialForward = afterLegEnded(forward.plan, { target: 0, attempt: 1 }, 'no_answer')!;
    expect(dialForward.step).toMatchObject({ kind: 'dial', leg: { target: 1, attempt: 1 }, to: '+1F' });
    expect(afterLegEnded(dialForward.plan, { target: 1, attempt: 1 }, 'no_answer')!.step).toEqual({ kind: 'hangup' });
    const voicemail = startPlan(settings(['+1A'], { action: 'voicemail' }));
    const recorded = afterLegEnded(voicemail.plan, { target: 0, attempt: 1 }, 'no_answer')!;
    expect(recorded.step).toEqual({ kind: 'voicemail' });
    expect(afterLegEnded(recorded.plan, { target: 0, attempt: 1 }, 'no_answer')).toBeUndefined();
  });

  it('property: whatever the legs report, in any order and repeated, no target try is dialed twice and the plan ends in one fallback', () => {
    const ends: LegEnd[] = ['completed', 'declined', 'no_answer', 'retryable', 'failed', 'dial_refused', 'join_timeout'];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('+1A', '+1B', '+1C', '+1D'), { minLength: 1, maxLength: 10 }),
        fc.constantFrom<VoiceSettings['ring_plan']['fallback']>({ action: 'hangup' }, { action: 'voicemail' }, { action: 'forward', to: '+1F' }),
        fc.array(fc.tuple(fc.nat(11), fc.integer({ min: 1, max: 2 }), fc.constantFrom(...ends)), { maxLength: 60 }),
        (targets, fallback, reports) => {
          const start = startPlan(settings(targets, fallback));
          let plan: RingPlanState = start.plan;
          const dialed = new Set<string>([`${0}/${1}`]);
          let fallbacks = 0;
          for (const [target, attempt, end] of reports) {
            const decision = afterLegEnded(plan, { target, attempt }, end);
            if (!decision) continue;
            plan = decision.plan;
            if (decision.step.kind === 'dial') {
              const key = `${decision.step.leg.target}/${decision.step.leg.attempt}`;
              if (dialed.has(key)) return false;
              dialed.add(key);
            } else fallbacks++;
          }
          return fallbacks <= 1;
        },
      ),
    );
  });
});
