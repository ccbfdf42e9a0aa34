// What `import { describe, it, expect, ... } from '@jest/globals'` gives a test in bare Node
// (jest-light-runner puts jest-circus's functions on globalThis). jest-light-runner ignores
// timeouts; jest's runner failed a test or hook after `testTimeout` (or the timeout passed to
// it): so do these wrappers, so a hung test still fails instead of hanging the run.
import { withDeadline } from './deadline.js';

const g = globalThis;

const deadlined = (fn, timeout, what) => (typeof fn === 'function' ? withDeadline(fn, timeout, what) : fn);

function testFunction(base) {
  const wrapped = (name, fn, timeout) => base(name, deadlined(fn, timeout, 'a test'), timeout);
  wrapped.only = (name, fn, timeout) => base.only(name, deadlined(fn, timeout, 'a test'), timeout);
  wrapped.skip = base.skip;
  wrapped.todo = base.todo;
  wrapped.each = (...table) => (name, fn, timeout) =>
    base.each(...table)(name, (...args) => withDeadline(() => fn(...args), timeout, 'a test')(), timeout);
  return wrapped;
}

const hook = (base, what) => (fn, timeout) => base(deadlined(fn, timeout, what), timeout);

export const it = testFunction(g.it);
export const test = testFunction(g.test);
export const describe = g.describe;
export const expect = g.expect;
export const jest = g.jest;
export const beforeAll = hook(g.beforeAll, 'a beforeAll hook');
export const afterAll = hook(g.afterAll, 'an afterAll hook');
export const beforeEach = hook(g.beforeEach, 'a beforeEach hook');
export const afterEach = hook(g.afterEach, 'an afterEach hook');
