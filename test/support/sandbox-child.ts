import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './ports.js';
import { ROOT } from './run-node.js';
import { waitFor } from './wait.js';

export interface SandboxChild {
  /** http://127.0.0.1:<SANDBOX_PORT> */
  url: string;
  process: ChildProcess;
  /** stderr so far (start-up line, delivery failures). */
  output(): string;
  stats(): Promise<any>;
  /** POST /sandbox/chaos: replaces the chaos of every later request. */
  setChaos(spec: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `node dist/main.js sandbox` as a real child process (as `npm start` runs it), on a free port,
 * with only the given environment (plus PATH and HOME); resolves once /sandbox/health answers.
 */
export async function startSandboxChild(env: Record<string, string>): Promise<SandboxChild> {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/main.js', 'sandbox'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', SANDBOX_PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`sandbox exited ${child.exitCode}: ${stderr}`);
    return (await fetch(`${url}/sandbox/health`)).status;
  }, (s) => s === 200, { timeoutMs: 20000, what: `the sandbox on ${url}` });
  return {
    url,
    process: child,
    output: () => stderr,
    stats: async () => (await fetch(`${url}/sandbox/stats`)).json(),
    async setChaos(spec) {
      const res = await fetch(`${url}/sandbox/chaos`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ chaos: spec }) });
      if (res.status !== 200) throw new Error(`POST /sandbox/chaos ${spec}: ${res.status} ${await res.text()}`);
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
