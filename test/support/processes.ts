import { spawn, type ChildProcess } from 'node:child_process';
import { ROOT } from './run-node.js';
import { waitFor } from './wait.js';

export type Role = 'api' | 'worker' | 'relay' | 'all' | 'sandbox';

/**
 * One role of the built program (`node dist/main.js <role>`) as a real child process, so tests
 * can SIGKILL it at any moment and start it again, as production would.
 */
export class RoleProcess {
  private child?: ChildProcess;
  private log = '';
  starts = 0;

  constructor(
    readonly role: Role,
    private readonly env: Record<string, string>,
  ) {}

  start(): this {
    this.child = spawn(process.execPath, ['dist/main.js', this.role], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...this.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (d) => (this.log = (this.log + d).slice(-8000)));
    this.starts++;
    return this;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Ends the process at once (default SIGKILL: no cleanup, no graceful shutdown). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  async restart(): Promise<void> {
    await this.kill();
    this.start();
  }

  /** The last of what it printed on stderr, for failure messages. */
  get output(): string {
    return this.log;
  }
}

/** Waits until an HTTP URL answers 2xx. */
export async function waitHttpOk(url: string, timeoutMs = 30000): Promise<void> {
  await waitFor(() => fetch(url).then((r) => r.ok, () => false), Boolean, { timeoutMs, intervalMs: 100, what: `${url} to answer` });
}
