// The worker path at a fixed rate beside the ingest benchmark: `node bench/e2e.mjs --timed-only`
// as a child process. Resolves once its private cluster is up, so the ingest benchmark can put its
// own database (and pgbench) on the same PostgreSQL; `timedRun` resolves when the e2e load starts.
import { spawn } from 'node:child_process';
import { ROOT } from '../lib.mjs';

export async function startE2eBeside(rate, seconds) {
  const child = spawn(process.execPath, ['bench/e2e.mjs', '--rate', String(rate), '--seconds', String(seconds), '--timed-only'], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const seen = (pattern) => new Promise((resolve, reject) => {
    const look = () => {
      const match = pattern.exec(stderr);
      if (match) resolve(match);
      return match;
    };
    child.stderr.on('data', () => look());
    exited.then(() => look() || reject(new Error(`bench/e2e.mjs exited before /${pattern.source}/:\n${stderr.slice(-2000)}`)));
  });
  child.stderr.on('data', (d) => (stderr += d));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT'); // e2e removes its cluster and children on SIGINT
    await exited;
  };
  try {
    const [, port] = await seen(/private cluster \(port (\d+)\)/);
    return {
      pgBase: `postgres://postgres@127.0.0.1:${port}/postgres`,
      timedRun: seen(/timed run: /),
      /** Waits for the e2e run to finish; resolves its report (stdout). */
      report: async () => {
        const { code, signal } = await exited;
        return code === 0 ? stdout.trim().replace(/^## /m, '### ') : `bench/e2e.mjs ended with ${code ?? signal}:\n${stdout.trim()}\n${stderr.slice(-2000)}`;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
