import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The nearest folder at or above `from` that holds a package.json. Our modules run from src/
 * (tests), from the compiled output in dist/lib/ and bundled into dist/main.js, dist/cli.js and their
 * chunks (scripts/bundle.mjs): no fixed number of `..` reaches the package root from all three.
 */
export function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json at or above ${from}`);
  }
}

/** The Onceline package's root folder (migrations/, .env). */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
