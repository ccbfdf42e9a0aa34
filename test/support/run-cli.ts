import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ROOT, type NodeRun } from './run-node.js';

interface Reply extends NodeRun {
  id?: number;
  ready?: boolean;
}

/**
 * The CLI host of this test worker (test/support/cli-host.mjs), started on first use and shared by
 * the files the worker runs after (each command carries its own environment). It holds nothing of
 * the worker's open: its process, pipe and IPC channel are unref'd, and it exits when the worker
 * does (its IPC channel closes). A module-level afterAll stopped it after the first file only: the
 * light runner evaluates this module once per worker, so later files' hosts were never stopped,
 * and an in-band run (`--runInBand`) waited for ever at its end.
 */
let host: Promise<ChildProcess> | undefined;
let nextId = 0;
const pending = new Map<number, (reply: NodeRun) => void>();

function startHost(): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./cli-host.mjs', import.meta.url)), [], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' },
      // The host's own output (the CLI's boot logs, an expected error's log line) stays out of
      // the suite's; the end of it is shown if the host itself dies.
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let log = '';
    child.stderr!.on('data', (chunk) => (log = (log + chunk).slice(-4000)));
    child.once('error', reject);
    child.once('exit', (code) => {
      host = undefined;
      for (const [id, settle] of pending) {
        pending.delete(id);
        settle({ code: code ?? 1, stdout: '', stderr: `the CLI host exited (${code}):\n${log}` });
      }
    });
    child.on('message', (reply: Reply) => {
      if (reply.ready) {
        release(child);
        return resolve(child);
      }
      const settle = pending.get(reply.id!);
      pending.delete(reply.id!);
      settle?.({ code: reply.code, stdout: reply.stdout, stderr: reply.stderr });
    });
  });
}

/** The host no longer keeps the worker's event loop alive: its process, its stderr pipe, its IPC channel. */
function release(child: ChildProcess): void {
  child.unref();
  (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  (child.channel as unknown as { unref?: () => void } | undefined)?.unref?.();
}

/**
 * Boots the worker's CLI host now (when it has none yet), without running a command: a file whose checks run commands
 * later (expectVerified) has it boot alongside other start-up work instead of holding up its
 * first check by the host's boot (1.6-2 s).
 */
export function warmCliHost(): void {
  host ??= startHost();
  // A host that fails to start fails the first command that awaits it, not this call.
  host.catch(() => undefined);
}

/**
 * Runs one admin CLI command (`args` as after `onceline`), with only the given environment (plus
 * PATH and HOME), as runNode runs `node dist/cli.js` (the same runCli of the built program, the
 * same output and exit code) but without booting a Node process per command: for tests of what a
 * command does and prints. Tests of the process itself (a signal, --help of the program) keep runNode.
 */
export async function runCliHere(args: string[], env: Record<string, string>): Promise<NodeRun> {
  host ??= startHost();
  const child = await host;
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    child.send({ id, args, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env } });
  });
}
