import { readFile } from 'node:fs/promises';

/** `--since`: an ISO 8601 time (a date at least), else the command stops with why. */
export function parseSinceOption(value: string): Date {
  const since = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(since.getTime())) throw new Error(`--since must be an ISO 8601 time, got "${value}"`);
  return since;
}

/** The text of `--carrier-log FILE` (an audit's input), or an error naming the file and why it cannot be read. */
export function readCarrierLog(file: string): Promise<string> {
  return readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new Error(`cannot read --carrier-log ${file}: ${err.code ?? err.message}`);
  });
}
