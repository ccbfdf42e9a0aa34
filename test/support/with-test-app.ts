import { afterAll, beforeAll } from '@jest/globals';
import { startTestApp, type TestApp, type TestAppOptions } from './app.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface WithTestAppOptions extends Omit<TestAppOptions, 'databaseUrl' | 'env'> {
  /** The app's environment; a function when it depends on something started in an earlier beforeAll. */
  env?: Record<string, string> | (() => Record<string, string>);
}

/** What `withTestApp` gives a test file: filled in by its beforeAll, torn down by its afterAll. */
export interface TestContext {
  readonly db: TestDatabase;
  readonly app: TestApp;
}

/**
 * The set-up nearly every integration file needs: a database of its own (cloned from the migrated
 * template), the real application on it (HTTP, and the relay and workers when asked), both closed
 * after the file. Call it at the top of a describe block:
 *
 *   const t = withTestApp({ relay: true, worker: true, env: () => carrier.env() });
 *   it('...', async () => { await fetch(`${t.app.url}/health/ready`); await t.db.count(...); });
 */
export function withTestApp(options: WithTestAppOptions = {}): TestContext {
  let db: TestDatabase | undefined;
  let app: TestApp | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    const env = typeof options.env === 'function' ? options.env() : options.env;
    app = await startTestApp({ ...options, env, databaseUrl: db.url });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`withTestApp: ${what} is used before its beforeAll ran`);
    return value;
  };
  return {
    get db() {
      return started(db, 'the database');
    },
    get app() {
      return started(app, 'the app');
    },
  };
}
