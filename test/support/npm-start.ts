import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from './database.js';
import { TEST_REDIS_URL } from './env.js';
import { freePort } from './ports.js';
import { ROOT } from './run-node.js';
import { waitFor } from './wait.js';

/**
 * `npm start` as a user runs it, as one child process of the test: its own ports, its own
 * database (cloned from the migrated template) and its own BullMQ prefix, so it shares nothing
 * with another install or test file on this machine.
 */
export class NpmStart {
  output = '';
  private child?: ChildProcess;
  /** Every descendant ever seen: one that outlived its parent is no longer below npm, and is still ours to kill. */
  private readonly seen = new Set<number>();

  private constructor(
    readonly db: TestDatabase,
    readonly port: number,
    readonly sandboxPort: number,
    readonly env: Record<string, string>,
  ) {}

  static async start(extraEnv: Record<string, string> = {}): Promise<NpmStart> {
    const [db, port, sandboxPort] = await Promise.all([createTestDatabase(), freePort(), freePort()]);
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/tmp',
      PORT: String(port),
      SANDBOX_PORT: String(sandboxPort),
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `npmstart_${randomBytes(4).toString('hex')}`,
      LOG_LEVEL: 'warn',
      ...extraEnv,
    };
    const app = new NpmStart(db, port, sandboxPort, env);
    app.child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (d: Buffer) => (app.output = (app.output + d).slice(-20000));
    app.child.stdout!.on('data', keep);
    app.child.stderr!.on('data', keep);
    // npm start builds first (a no-op incremental build when dist/ is current), then boots two roles.
    await waitFor(() => app.ready(), Boolean, { timeoutMs: 150_000, intervalMs: 250, what: `npm start to answer on ${port} and ${sandboxPort}` }).catch((err) => {
      throw new Error(`${(err as Error).message}\n--- npm start printed:\n${app.output}`);
    });
    return app;
  }

  get pid(): number {
    return this.child!.pid!;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get sandboxUrl(): string {
    return `http://127.0.0.1:${this.sandboxPort}`;
  }

  async ready(): Promise<boolean> {
    const answers = await Promise.all(
      [`${this.url}/health/ready`, `${this.sandboxUrl}/sandbox/health`].map((url) =>
        fetch(url, { signal: AbortSignal.timeout(2000) }).then((res) => res.status, () => 0),
      ),
    );
    return answers.every((status) => status === 200);
  }

  /** Whether anything still accepts a connection on either port. */
  async listening(): Promise<boolean> {
    const answers = await Promise.all(
      [`${this.url}/health/live`, `${this.sandboxUrl}/sandbox/health`].map((url) =>
        fetch(url, { signal: AbortSignal.timeout(1000) }).then(() => true, () => false),
      ),
    );
    return answers.some(Boolean);
  }

  /** Every live process below npm's pid (the shell exec'd away, start.mjs, the roles). */
  descendants(): number[] {
    const parentOf = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (state !== 'Z') parentOf.set(Number(entry), Number(ppid));
      } catch {
        // gone while we read
      }
    }
    const found = new Set<number>([this.pid]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, ppid] of parentOf) {
        if (found.has(ppid) && !found.has(pid)) {
          found.add(pid);
          grew = true;
        }
      }
    }
    found.delete(this.pid);
    for (const pid of found) this.seen.add(pid);
    return [...found];
  }

  /** Teardown whatever a test left: every process of it killed, its database dropped. */
  async destroy(): Promise<void> {
    for (const pid of new Set([...this.descendants(), ...this.seen, this.pid])) {
      if (!alive(pid)) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await this.db.drop();
  }
}

/** Whether a process with this pid is alive (a zombie waiting for its parent counts as gone). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
