import { describe, expect, it } from '@jest/globals';
import { withDeadline } from './deadline.js';

/** The timeouts jest's runner enforced, kept by our shim of `@jest/globals` (jest-light-runner has none). */
describe('withDeadline', () => {
  it('fails a body that never settles once its timeout passes', async () => {
    await expect(withDeadline(() => new Promise(() => undefined), 50, 'a test')()).rejects.toThrow('Exceeded timeout of 50 ms for a test.');
  });

  it('fails a done-style body that never calls done', async () => {
    await expect(withDeadline((_done: () => void) => undefined, 50, 'a hook')()).rejects.toThrow('Exceeded timeout of 50 ms for a hook.');
  });

  it('passes through what the body resolves or throws', async () => {
    await expect(withDeadline(async () => 'ok', 1_000, 'a test')()).resolves.toBe('ok');
    await expect(withDeadline(async () => { throw new Error('boom'); }, 1_000, 'a test')()).rejects.toThrow('boom');
    await expect(withDeadline((done: (err?: Error) => void) => done(new Error('done with an error')), 1_000, 'a test')()).rejects.toThrow('done with an error');
  });
});

describe('unhandled rejections', () => {
  it('a rejection handled after its tick is no error (the body attaches its handler later)', async () => {
    const body = async () => {
      const late = Promise.reject(new Error('handled late'));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await expect(late).rejects.toThrow('handled late');
    };
    await expect(withDeadline(body, 1_000, 'a test')()).resolves.toBeUndefined();
  });

  it('a rejection still unhandled when the body ends fails it', async () => {
    const body = async () => {
      void Promise.reject(new Error('nobody listens'));
    };
    await expect(withDeadline(body, 1_000, 'a test')()).rejects.toThrow('a test left 1 promise rejection(s) unhandled: Error: nobody listens');
  });

  it('a failing body reports its own error, and its unhandled rejections do not outlive it', async () => {
    const body = async () => {
      void Promise.reject(new Error('left behind'));
      throw new Error('the test failed');
    };
    await expect(withDeadline(body, 1_000, 'a test')()).rejects.toThrow('the test failed');
    await expect(withDeadline(async () => undefined, 1_000, 'the next test')()).resolves.toBeUndefined();
  });
});
