import { it } from '@jest/globals';
import { appendFileSync } from 'node:fs';

/**
 * What every integration test file pays before its first test (bench/jest-boot.mjs runs this file
 * several times in one jest worker): importing the app's module graph into the file's own module
 * registry, a database cloned from the template, the app started and closed.
 */
it('boots the app as an integration test file does', async () => {
  const t0 = performance.now();
  const { createTestDatabase } = await import('../../test/support/database.js');
  const { startTestApp } = await import('../../test/support/app.js');
  const imported = performance.now();
  const db = await createTestDatabase();
  const cloned = performance.now();
  const app = await startTestApp({ databaseUrl: db.url });
  const started = performance.now();
  await app.close();
  await db.drop();
  const closed = performance.now();
  appendFileSync(process.env.BENCH_JEST_BOOT_OUT!, `${JSON.stringify({ import: imported - t0, database: cloned - imported, app: started - cloned, teardown: closed - started })}\n`);
});
