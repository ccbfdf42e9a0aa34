import { describe, expect, it } from '@jest/globals';
import { BehaviourBook, BehaviourError, DEFAULT_REACTION, formatReaction, parseStep, parseSteps, planDialedLeg, type TargetReaction } from '../call-behaviour.js';
import { farEndHangup, isDecline, ourHangup, TARGET_HANGUPS } from '../call-hangups.js';

describe('parseStep / parseSteps', () => {
  it('reads every behaviour the control endpoint documents', () => {
    expect(parseStep({ answer_after_ms: 300, talk_ms: 2000 }, 'x')).toEqual({ reaction: { kind: 'answer', afterMs: 300, talkMs: 2000, transcript: null }, times: null });
    expect(parseStep({}, 'x').reaction).toEqual({ kind: 'answer', afterMs: 300, talkMs: null, transcript: null });
    expect(parseStep({ decline: true }, 'x').reaction).toEqual({ kind: 'decline', afterMs: 100 });
    expect(parseStep({ busy: true, after_ms: 5 }, 'x').reaction).toEqual({ kind: 'busy', afterMs: 5 });
    expect(parseStep({ no_answer: true }, 'x').reaction).toEqual({ kind: 'no_answer' });
    expect(parseStep({ sip_503: true, times: 1 }, 'x')).toEqual({ reaction: { kind: 'sip_error', sip: 503, afterMs: 100 }, times: 1 });
    expect(parseStep({ sip_error: 408 }, 'x').reaction).toEqual({ kind: 'sip_error', sip: 408, afterMs: 100 });
    expect(parseStep({ dial_error: 500, times: 2 }, 'x')).toEqual({ reaction: { kind: 'dial_error', status: 500 }, times: 2 });
    expect(parseStep({ transcript: ['hi'] }, 'x').reaction).toMatchObject({ kind: 'answer', transcript: ['hi'] });
    expect(parseStep({ answer_then_drop: true }, 'x').reaction).toEqual({ kind: 'answer', afterMs: 300, talkMs: null, transcript: null, dropAfterMs: 0 });
    expect(parseStep({ answer_after_ms: 20, drop_after_ms: 50 }, 'x').reaction).toEqual({ kind: 'answer', afterMs: 20, talkMs: null, transcript: null, dropAfterMs: 50 });
  });

  it('refuses what makes no sense, naming the field', () => {
    expect(() => parseStep({ decline: true, busy: true }, '+1555')).toThrow(/\+1555 names more than one behaviour: decline, busy/);
    expect(() => parseStep({ decline: false }, 'x')).toThrow(/x.decline must be true/);
    expect(() => parseStep({ decline: true, talk_ms: 5 }, 'x')).toThrow(/x.talk_ms applies only to answer/);
    expect(() => parseStep({ answer_after_ms: 5, after_ms: 5 }, 'x')).toThrow(/x.after_ms applies only to/);
    expect(() => parseStep({ answer_after_ms: -1 }, 'x')).toThrow(/answer_after_ms must be a whole number/);
    expect(() => parseStep({ dial_error: 200 }, 'x')).toThrow(/dial_error must be a whole number from 400 to 599/);
    expect(() => parseStep({ times: 0 }, 'x')).toThrow(/times/);
    expect(() => parseStep({ explode: 1 }, 'x')).toThrow(/unknown field explode/);
    expect(() => parseStep('answer', 'x')).toThrow(BehaviourError);
    expect(() => parseStep({ transcript: [] }, 'x')).toThrow(/transcript/);
    expect(() => parseStep({ answer_then_drop: false }, 'x')).toThrow(/x.answer_then_drop must be true/);
    expect(() => parseStep({ drop_after_ms: 5, talk_ms: 5 }, 'x')).toThrow(/talk_ms and answer_then_drop \/ drop_after_ms exclude each other/);
    expect(() => parseStep({ busy: true, answer_then_drop: true }, 'x')).toThrow(/x.answer_then_drop applies only to answer/);
    expect(() => parseSteps([], 'x')).toThrow(/list of 1 to 20/);
    expect(() => parseSteps([{ busy: true }, { nope: 1 }], 'n')).toThrow(/n\[1\]: unknown field nope/);
  });

  it('formats a reaction back into input that parses to the same reaction', () => {
    const reactions: TargetReaction[] = [
      DEFAULT_REACTION,
      { kind: 'answer', afterMs: 10, talkMs: null, transcript: ['a', 'b'] },
      { kind: 'answer', afterMs: 10, talkMs: null, transcript: null, dropAfterMs: 0 },
      { kind: 'decline', afterMs: 7 },
      { kind: 'busy', afterMs: 0 },
      { kind: 'sip_error', sip: 504, afterMs: 3 },
      { kind: 'no_answer' },
      { kind: 'dial_error', status: 422 },
    ];
    for (const reaction of reactions) expect(parseStep(formatReaction(reaction), 'x').reaction).toEqual(reaction);
  });
});

describe('BehaviourBook', () => {
  it('uses a counted step for that many dials, then the next step, then the default', () => {
    const book = new BehaviourBook();
    book.set('+15550002222', parseSteps([{ sip_503: true, times: 2 }, { busy: true, times: 1 }], 'x'));
    expect(book.take('+15550002222').kind).toBe('sip_error');
    expect(book.view().numbers['+15550002222']).toEqual([{ sip_error: 503, after_ms: 100, times: 1 }, { busy: true, after_ms: 100, times: 1 }]);
    expect(book.take('+15550002222').kind).toBe('sip_error');
    expect(book.take('+15550002222').kind).toBe('busy');
    expect(book.take('+15550002222')).toEqual(DEFAULT_REACTION);
    expect(book.take('+19999999999')).toEqual(DEFAULT_REACTION);
  });

  it('keeps a step without times for every dial; set copies the steps it is given; clear restores the default', () => {
    const book = new BehaviourBook();
    const steps = parseSteps({ decline: true }, 'x');
    book.set('+1', steps);
    book.set('+2', parseSteps({ busy: true, times: 1 }, 'x'));
    for (let i = 0; i < 5; i++) expect(book.take('+1').kind).toBe('decline');
    book.take('+2');
    expect(steps[0]!.times).toBeNull();
    book.setDefault({ kind: 'no_answer' });
    expect(book.take('+3')).toEqual({ kind: 'no_answer' });
    book.remove('+1');
    expect(book.take('+1')).toEqual({ kind: 'no_answer' });
    book.clear();
    expect(book.take('+3')).toEqual(DEFAULT_REACTION);
    expect(book.view()).toEqual({ default: formatReaction(DEFAULT_REACTION), numbers: {} });
  });
});

describe('planDialedLeg', () => {
  it('answers before the ring timeout, or times out', () => {
    expect(planDialedLeg({ kind: 'answer', afterMs: 300, talkMs: 2000, transcript: null }, 1000)).toEqual({ at: 300, then: 'answer', talkMs: 2000 });
    expect(planDialedLeg({ kind: 'answer', afterMs: 1000, talkMs: 2000, transcript: null }, 1000)).toEqual({ at: 1000, then: 'hangup', hangup: TARGET_HANGUPS.timeout });
    expect(planDialedLeg({ kind: 'answer', afterMs: 300, talkMs: null, transcript: null, dropAfterMs: 0 }, 1000)).toEqual({ at: 300, then: 'answer', talkMs: 0, hangupFirst: true });
    expect(planDialedLeg({ kind: 'answer', afterMs: 1000, talkMs: null, transcript: null, dropAfterMs: 0 }, 1000).then).toBe('hangup');
    expect(planDialedLeg({ kind: 'no_answer' }, 200)).toEqual({ at: 200, then: 'hangup', hangup: { cause: 'timeout', source: 'unknown', sip: '487' } });
  });

  it('declines with 603, is busy with 486, fails with the SIP code given; all as the callee', () => {
    expect(planDialedLeg({ kind: 'decline', afterMs: 50 }, 1000)).toEqual({ at: 50, then: 'hangup', hangup: { cause: 'call_rejected', source: 'callee', sip: '603' } });
    expect(planDialedLeg({ kind: 'busy', afterMs: 50 }, 1000)).toEqual({ at: 50, then: 'hangup', hangup: { cause: 'user_busy', source: 'callee', sip: '486' } });
    expect(planDialedLeg({ kind: 'sip_error', sip: 503, afterMs: 50 }, 1000)).toEqual({ at: 50, then: 'hangup', hangup: { cause: 'unspecified', source: 'callee', sip: '503' } });
    expect(planDialedLeg({ kind: 'busy', afterMs: 5000 }, 1000).at).toBe(1000);
  });
});

describe('hangup descriptors', () => {
  it('name the side that hung up, seen from the leg', () => {
    expect(ourHangup({ direction: 'outgoing', answered: false })).toEqual({ cause: 'originator_cancel', source: 'caller', sip: '487' });
    expect(ourHangup({ direction: 'outgoing', answered: true })).toEqual({ cause: 'normal_clearing', source: 'caller', sip: '200' });
    expect(ourHangup({ direction: 'incoming', answered: true })).toEqual({ cause: 'normal_clearing', source: 'callee', sip: '200' });
    expect(farEndHangup({ direction: 'incoming', answered: false })).toEqual({ cause: 'originator_cancel', source: 'caller', sip: '487' });
    expect(farEndHangup({ direction: 'incoming', answered: true })).toEqual({ cause: 'normal_clearing', source: 'caller', sip: '200' });
    expect(farEndHangup({ direction: 'outgoing', answered: true })).toEqual({ cause: 'normal_clearing', source: 'callee', sip: '200' });
    expect(farEndHangup({ direction: 'outgoing', answered: false })).toEqual(TARGET_HANGUPS.decline);
    expect([TARGET_HANGUPS.decline, TARGET_HANGUPS.busy, TARGET_HANGUPS.timeout, undefined].map(isDecline)).toEqual([true, true, false, false]);
  });
});
