import { readFile } from 'node:fs/promises';
import { isoTimeOption } from './options.js';

/** `--since`: an ISO 8601 time (a date at least), else the command stops with why. */
export function parseSinceOption(value: string): Date {
  return isoTimeOption('--since', value);
}

/** The text of `--carrier-log FILE` (an audit's input), or an error naming the file and why it cannot be read. */
export function readCarrierLog(file: string): Promise<string> {
  return readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new Error(`cannot read --carrier-log ${file}: ${err.code ?? err.message}`);
  });
}
