// The suite's jest runner (jest.config.js `runner`): jest-light-runner in child processes, with
// one race of its hand-over fixed.
//
// A child process asks the runner for its worker data (jest's config) when it starts its first
// file. jest-light-runner 0.8.2 answers through one channel per project that all its children
// share: each file it dispatches adds its worker's listener to a shared set, and any child's ask
// answers every listener in the set and empties it. When two children of a pool (one per project,
// `maxWorkers` children each) start at once, one child's ask can answer another whose file is
// dispatched but not yet started: that data arrives before the child listens and is dropped, and
// its own ask later finds its listener gone. The file never starts and the run waits for ever
// (seen: `npm test -- --maxWorkers=4`, 120 of 121 files passed, the 121st never reported; and
// the Node 20 hang .ci/run describes). Here each dispatched file gets a channel of its own, so a
// child's ask is answered to that child alone.
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { channelOfOne } from './channel-of-one.mjs';

// The Tinypool class jest-light-runner itself imports (resolved from its own folder).
const lightRunner = fileURLToPath(import.meta.resolve('jest-light-runner'));
const { default: Tinypool } = await import(pathToFileURL(createRequire(lightRunner).resolve('tinypool')).href);

const run = Tinypool.prototype.run;
Tinypool.prototype.run = function runWithChannelOfOne(task, options) {
  return run.call(this, task, options?.channel ? { ...options, channel: channelOfOne(options.channel) } : options);
};

export { default } from 'jest-light-runner/child-process';
