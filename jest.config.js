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
