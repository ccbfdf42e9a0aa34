import { AsyncLocalStorage } from 'node:async_hooks';

/** How a command prints: with --json exactly one JSON document on stdout; otherwise text. */
export interface OutputOptions {
  json?: boolean;
}

/**
 * Where one CLI run writes, and the exit code its command asked for (setFailed): the process's
 * own streams, or, for a run inside another process (runCli from a test), streams of its own.
 */
export interface CliStreams {
  out(text: string): void;
  err(text: string): void;
  exitCode?: number;
}

/** The process's own stdout and stderr. */
export function processStreams(): CliStreams {
  return { out: (text) => void process.stdout.write(text), err: (text) => void process.stderr.write(text) };
}

const runs = new AsyncLocalStorage<CliStreams>();

/** The streams of the CLI run this code is part of. */
export function cliStreams(): CliStreams {
  return runs.getStore() ?? processStreams();
}

/** Runs `run` (one CLI run) writing to `streams`. */
export function withCliStreams<T>(streams: CliStreams, run: () => Promise<T>): Promise<T> {
  return runs.run(streams, run);
}

/** The command ran and reports a failure (an invariant broken): exit code 1, the app still closing normally. */
export function setFailed(): void {
  const run = runs.getStore();
  if (run) run.exitCode = 1;
  else process.exitCode = 1;
}

export function printResult(options: OutputOptions, result: unknown, human: string): void {
  cliStreams().out(options.json ? `${JSON.stringify(result)}\n` : `${human}\n`);
}

/** An error leaves the same way: one JSON document with errors[] under --json, a line on stderr otherwise. */
export function printError(json: boolean, err: unknown): void {
  const e = err as { message?: string; status?: number; getStatus?: () => number; getResponse?: () => unknown };
  // An HttpException from a service the API shares says what happened in its body's detail.
  const response = typeof e?.getResponse === 'function' ? (e.getResponse() as { detail?: unknown }) : undefined;
  const detail = typeof response?.detail === 'string' ? response.detail : (e?.message ?? String(err));
  if (json) {
    const status = typeof e?.getStatus === 'function' ? e.getStatus() : undefined;
    const code = status === 404 ? 'not_found' : 'command_failed';
    cliStreams().out(`${JSON.stringify({ errors: [{ code, title: 'Command failed', detail }] })}\n`);
  } else {
    cliStreams().err(`error: ${detail}\n`);
  }
}


/**
 * Required options are checked here rather than by commander, whose own errors bypass --json
 * (nest-commander installs its exit override after the subcommands exist).
 */
export function requireOption<T extends object, K extends keyof T & string>(options: T, key: K): NonNullable<T[K]> {
  const value = options[key];
  if (value === undefined || value === null || value === '') throw new Error(`required option '--${key}' not specified`);
  return value as NonNullable<T[K]>;
}
