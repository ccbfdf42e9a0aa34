import { describe, expect, it } from '@jest/globals';
import { LostAnswerBook, parseLostAnswers } from '../lost-answers.js';

describe('lose_command_answers', () => {
  it('reads a count (connection closed unanswered) or {times, status} (a 5xx), per command; null removes', () => {
    expect([...parseLostAnswers({ dial: 2, bridge: { times: 1, status: 504 }, hangup: null })]).toEqual([
      ['dial', { times: 2, status: null }],
      ['bridge', { times: 1, status: 504 }],
      ['hangup', null],
    ]);
  });

  it('refuses what it cannot play, naming the field', () => {
    expect(() => parseLostAnswers([])).toThrow(/lose_command_answers must be an object/);
    expect(() => parseLostAnswers({ transfer: 1 })).toThrow(/lose_command_answers.transfer: not a command/);
    expect(() => parseLostAnswers({ dial: 0 })).toThrow(/lose_command_answers.dial times must be a whole number/);
    expect(() => parseLostAnswers({ dial: { times: 1, status: 422 } })).toThrow(/lose_command_answers.dial.status must be a whole number from 500 to 599/);
    expect(() => parseLostAnswers({ dial: { times: 1, when: 'now' } })).toThrow(/unknown field when/);
  });

  it('loses the next `times` answers of that command only, then answers again', () => {
    const book = new LostAnswerBook();
    book.apply(parseLostAnswers({ dial: 2, answer: { times: 1, status: 503 } }));
    expect(book.view()).toEqual({ dial: { times: 2 }, answer: { times: 1, status: 503 } });
    expect(book.take('bridge')).toBeUndefined();
    expect(book.take('dial')).toEqual({ status: null });
    expect(book.take('answer')).toEqual({ status: 503 });
    expect(book.take('answer')).toBeUndefined();
    expect(book.take('dial')).toEqual({ status: null });
    expect(book.take('dial')).toBeUndefined();
    book.apply(parseLostAnswers({ hangup: 1 }));
    book.apply(parseLostAnswers({ hangup: null }));
    expect(book.view()).toEqual({});
  });
});
