import { startTestApp, type TestApp } from './app.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { freePort } from './ports.js';
import { startSandboxChild, type SandboxChild } from './sandbox-child.js';

export interface AppAgainstSandbox {
  db: TestDatabase;
  sandbox: SandboxChild;
  app: TestApp;
  stop(): Promise<void>;
}

/**
 * The real app (HTTP, relay, worker) on its own database, sending through the carrier sandbox run
 * as `node dist/main.js sandbox` (all three carriers' API URLs point there), which calls the app
 * back on a port chosen first. `sandboxEnv` and `appEnv` add to (or replace) the settings below.
 */
export async function startAppAgainstSandbox(sandboxEnv: Record<string, string> = {}, appEnv: Record<string, string> = {}): Promise<AppAgainstSandbox> {
  const db = await createTestDatabase();
  const port = await freePort();
  const publicBaseUrl = `http://127.0.0.1:${port}`;
  const sandbox = await startSandboxChild({ PUBLIC_BASE_URL: publicBaseUrl, SANDBOX_RECEIPT_DELAY_MS: '50', LOG_LEVEL: 'error', ...sandboxEnv });
  const app = await startTestApp({
    databaseUrl: db.url,
    relay: true,
    worker: true,
    port,
    env: {
      PUBLIC_BASE_URL: publicBaseUrl,
      TELNYX_API_URL: `${sandbox.url}/v2`,
      TWILIO_API_URL: `${sandbox.url}/twilio`,
      VONAGE_API_URL: sandbox.url,
      CARRIER_EVENT_RETRY_BASE_MS: '100',
      ...appEnv,
    },
  });
  return {
    db, sandbox, app,
    async stop() {
      await app.close();
      await sandbox.stop();
      await db.drop();
    },
  };
}
