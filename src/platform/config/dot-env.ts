import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { PACKAGE_ROOT } from '../package-root.js';

export type EnvSource = 'environment' | '.env' | 'default';

export interface LoadedEnv {
  /** The environment with the file's variables added where the environment has none. */
  env: Record<string, string | undefined>;
  /** The file read, when there was one. */
  file?: string;
  /** Where a variable's value comes from: the process environment wins over the file. */
  sourceOf(key: string): EnvSource;
}

/**
 * One configuration for the app, the CLI, the demo and the scripts: the variables of `.env` in the
 * package root (or the file ONCELINE_ENV_FILE names; an empty ONCELINE_ENV_FILE reads none) under
 * the process environment, which wins. No file: the environment alone.
 */
export function withDotEnv(env: Record<string, string | undefined> = process.env): LoadedEnv {
  const named = env.ONCELINE_ENV_FILE;
  const file = named === '' ? undefined : named ? (isAbsolute(named) ? named : resolve(PACKAGE_ROOT, named)) : resolve(PACKAGE_ROOT, '.env');
  let fromFile: Record<string, string | undefined> = {};
  if (file) {
    try {
      fromFile = parseEnv(readFileSync(file, 'utf8'));
    } catch (err) {
      // No .env is the ordinary case; a file named outright must exist.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || named) throw new Error(`cannot read the configuration file ${file}: ${(err as Error).message}`);
      return { env, sourceOf: (key) => (env[key] !== undefined ? 'environment' : 'default') };
    }
  }
  const merged = { ...env };
  for (const [key, value] of Object.entries(fromFile)) if (merged[key] === undefined) merged[key] = value;
  return {
    env: merged,
    file,
    sourceOf: (key) => (env[key] !== undefined ? 'environment' : fromFile[key] !== undefined ? '.env' : 'default'),
  };
}

/** A URL fit to print: its password replaced by ***. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}
