// Imported first by the scripts that read settings (start, demo, stripe-test-event): the same
// `.env` as the app and the CLI read (src/platform/config/dot-env.ts), under the environment.
import { withDotEnv } from '../dist/lib/platform/config/dot-env.js';

const loaded = withDotEnv(process.env);
for (const [key, value] of Object.entries(loaded.env)) if (process.env[key] === undefined && value !== undefined) process.env[key] = value;
