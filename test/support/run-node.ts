import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The package root: spawned programs run from dist/ there, as `npm start` and users run them. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface NodeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs fn over items with at most `limit` at once (spawned Node processes are CPU-heavy to boot). */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/**
 * Runs `node <args>` (e.g. dist/cli.js migrate --json) to completion with only the given
 * environment (plus PATH and HOME), so nothing from the test runner's environment leaks in.
 */
export function runNode(args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The WHOLE of a run's stdout as one JSON document (what every `--json` command prints), or a failure showing both streams. */
export function oneJsonDocument(run: NodeRun): any {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`stdout is not one JSON document:\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

/** Parses the WHOLE of stdout: exactly one JSON document or the test fails. */
export function oneDocument(run: NodeRun): any {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`stdout is not one JSON document:\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}
