import { afterEach, describe, expect, it } from '@jest/globals';
import { alive, NpmStart } from '../support/npm-start.js';
import { waitFor } from '../support/wait.js';

/**
 * A process manager, `timeout`, CI or an IDE signals the one pid it started: `npm start`'s.
 * Every role and the sandbox must stop gracefully from that alone, within 10 s.
 */
describe('npm start stops every role when only its own pid is signalled', () => {
  let app: NpmStart | undefined;
  afterEach(async () => {
    await app?.destroy();
    app = undefined;
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to npm's pid: start.mjs, dist/main.js all and the sandbox gone within 10 s, each after its "stopped" line`, async () => {
      app = await NpmStart.start();
      const processes = app.descendants();
      // start.mjs and its two roles at least (npm's shell exec's start.mjs away)
      expect(processes.length).toBeGreaterThanOrEqual(3);

      const signalled = Date.now();
      process.kill(app.pid, signal);
      const running = app;
      await waitFor(
        async () => ({ left: [...processes, running.pid].filter(alive), listening: await running.listening() }),
        (s) => s.left.length === 0 && !s.listening,
        { timeoutMs: 10_000, intervalMs: 100, what: `every process of npm start gone after ${signal}` },
      ).catch((err) => {
        throw new Error(`${(err as Error).message}\n--- npm start printed:\n${running.output}`);
      });
      expect(Date.now() - signalled).toBeLessThan(10_000);
      // Each stopped by finishing its shutdown (relay, workers' jobs in hand, HTTP, pools), not by a kill.
      expect(app.output).toContain('onceline all stopped');
      expect(app.output).toContain('onceline sandbox stopped');
      expect(app.output).toMatch(/\[start\] stopped/);
    }, 240_000);
  }
});
