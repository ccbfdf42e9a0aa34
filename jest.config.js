// ESM + swc set-up that works with NestJS 12 (see docs/testing.md).
// Two tiers: `unit` (specs beside the code, src/**/__tests__/*.spec.ts: pure functions, no
// PostgreSQL, Redis or build) and `integration` (test/**, mirroring src/: the real services and
// the built program). `npm test` runs both; `npm run test:unit` only the first.
// Both tiers run in bare Node through jest-light-runner, not in jest's per-file vm context: a
// worker process imports the application's modules once and every file it runs after reuses
// them (jest's own runner evaluated NestJS, TypeORM, BullMQ and our src/ again for each of ~120
// files: 1.1 s of CPU each, measured by bench/jest-boot.mjs). TypeScript is compiled by swc in a
// Node module hook (test/support/runtime/), and test/support/runtime/jest-globals.mjs keeps
// jest's timeouts and its rule for unhandled rejections, which the light runner leaves out. What this gives up: each file's fresh
// module registry; module-level state in src/ and test/support/ lives as long as the worker.
const shared = {
  // jest-light-runner in child processes, with its hand-over of jest's config to them fixed
  // (test/support/runtime/light-runner.mjs says the race).
  runner: '<rootDir>/test/support/runtime/light-runner.mjs',
  setupFiles: ['<rootDir>/test/support/runtime/register.mjs'],
};

export default {
  // Three files at once on this 2-core machine (was four): at four, the pacing tests that count a
  // carrier's 429s at 20/s (sandbox-pacing) failed in 5 of 7 full runs on 2026-12-07 (the load's
  // jitter between a claim and its send outgrows the burst margin) and passed alone; at three the
  // full run took 182 s. Files wait (retry schedules, leases, ring timeouts) as much as they compute. `node
  // bench/suite-cpu.mjs -- npm test -- --maxWorkers=N`: 2 workers ~157 s (206 core-s busy, 107
  // idle), 3 124-128 s (41 idle), 4 112-113 s (18 idle); the tenth pass in the git history of docs/benchmarks.md.
  maxWorkers: 3,
  testSequencer: '<rootDir>/test/support/sequencer.mjs',
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/src/**/__tests__/**/*.spec.ts'] },
    {
      ...shared,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.mjs',
      globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
    },
  ],
};
