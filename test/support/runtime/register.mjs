// The test workers' set-up file (jest.config.js `setupFiles`): TypeScript and `@jest/globals` for
// the tests that run in bare Node (jest-light-runner), with stack traces in the .ts lines.
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);
process.setSourceMapsEnabled(true);
