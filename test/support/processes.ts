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

  private restarts: Promise<void> = Promise.resolve();

  start(): this {
    // A second child would outlive the test: nothing holds it any more (CI once kept a relay
    // and a worker running for an hour after two overlapping restarts of one process).
    if (this.running) throw new Error(`${this.role} is already running: kill() it first`);
    this.child = spawn(process.execPath, ['dist/main.js', this.role], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...this.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.started = false;
    const child = this.child;
    const startedLine = `onceline ${this.role} started`;
    // This child's own output only (the log goes on across restarts), with a tail of the last
    // chunk so a line split across two chunks still counts.
    let tail = '';
    child.stderr!.on('data', (d) => {
      const text = tail + d;
      if (this.child === child && text.includes(startedLine)) this.started = true;
      tail = text.slice(-startedLine.length);
      this.log = (this.log + d).slice(-8000);
    });
    this.starts++;
    return this;
  }

  /** Whether the current child has logged "onceline <role> started" (its connections are up, it works). */
  started = false;

  /**
   * Resolves once the current child has started (main.ts logs "onceline <role> started" once its
   * database, Redis and loops are up); throws with its output if it exits first. A test that breaks
   * a service mid-run waits for this first: a role still booting when PostgreSQL stops exits
   * ("onceline failed to start"), which is a boot failure, not the outage the test is about.
   */
  async waitStarted(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.started) {
      if (!this.running) throw new Error(`${this.role} exited (${this.exit}) before it started:\n${this.log}`);
      if (Date.now() > deadline) throw new Error(`${this.role} did not log that it started within ${timeoutMs} ms:\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** How the current child ended (exit code or signal), for failure messages. */
  get exit(): string {
    if (!this.child) return 'never started';
    return this.child.signalCode ?? `code ${this.child.exitCode}`;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The operating system's id of the current child (undefined before the first start). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Teardown: SIGTERM (a graceful shutdown), then SIGKILL if it has not exited within
   * `graceMs`, so a shutdown that hangs cannot leave the process running after the test.
   */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      await this.kill('SIGTERM');
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends the process at once (default SIGKILL: no cleanup, no graceful shutdown). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  /** Kill, then start again. Restarts of one process run one after another, however they overlap. */
  restart(): Promise<void> {
    this.restarts = this.restarts.then(async () => {
      await this.kill();
      this.start();
    });
    return this.restarts;
  }

  /** The last of what it printed on stderr, for failure messages. */
  get output(): string {
    return this.log;
  }
}

/** Waits until an HTTP URL answers 2xx (a deadline, not a pause: a loaded 2-core machine has taken 50 s to boot six processes). */
export async function waitHttpOk(url: string, timeoutMs = 120_000): Promise<void> {
  await waitFor(() => fetch(url).then((r) => r.ok, () => false), Boolean, { timeoutMs, intervalMs: 100, what: `${url} to answer` });
}
