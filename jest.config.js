// ESM + swc set-up that works with NestJS 12 (see docs/benchmarks-method.md and the README).
// Two tiers: `unit` (specs beside the code, src/**/__tests__/*.spec.ts: pure functions, no
// PostgreSQL, Redis or build) and `integration` (test/**, mirroring src/: the real services and
// the built program). `npm test` runs both; `npm run test:unit` only the first.
const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['@swc/jest', {
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        target: 'es2022',
      },
      module: { type: 'es6' },
    }],
  },
};

export default {
  testTimeout: 60000,
  maxWorkers: 2,
  testSequencer: '<rootDir>/test/support/sequencer.mjs',
  // How long a worker may take to end once its last file is done before jest kills it and warns
  // "A worker process has failed to exit gracefully" (default 500 ms). Measured (#28, probe in
  // the note): our workers have nothing left but their stdio pipes when told to end and emit
  // 'exit' within 2 ms, but Node then frees a 350-530 MB heap, which took 300-970 ms on this
  // 2-core machine under load; so the warning named no leak. A real leak (a socket, server, child
  // or ref'd timer left open) keeps a worker alive for good and is still reported, 5 s later.
  workerGracefulExitTimeout: 5000,
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
