/** How a command prints: with --json exactly one JSON document on stdout; otherwise text. */
export interface OutputOptions {
  json?: boolean;
}

export function printResult(options: OutputOptions, result: unknown, human: string): void {
  process.stdout.write(options.json ? `${JSON.stringify(result)}\n` : `${human}\n`);
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
    process.stdout.write(`${JSON.stringify({ errors: [{ code, title: 'Command failed', detail }] })}\n`);
  } else {
    process.stderr.write(`error: ${detail}\n`);
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
