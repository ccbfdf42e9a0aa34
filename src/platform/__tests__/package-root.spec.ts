import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPackageRoot, PACKAGE_ROOT } from '../package-root.js';

describe('findPackageRoot', () => {
  const root = mkdtempSync(join(tmpdir(), 'onceline-root-'));
  writeFileSync(join(root, 'package.json'), '{}');
  mkdirSync(join(root, 'dist', 'lib', 'platform', 'database'), { recursive: true });
  mkdirSync(join(root, 'dist', 'chunks'), { recursive: true });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('finds the same root from the compiled output three levels down and from a bundle chunk one level down', () => {
    expect(findPackageRoot(join(root, 'dist', 'lib', 'platform', 'database'))).toBe(root);
    expect(findPackageRoot(join(root, 'dist', 'chunks'))).toBe(root);
    expect(findPackageRoot(root)).toBe(root);
  });

  it('says so when no folder above holds a package.json', () => {
    expect(() => findPackageRoot('/')).toThrow(/no package.json at or above \//);
  });

  it("is this repository's root when run from src/", () => {
    expect(PACKAGE_ROOT).toBe(join(import.meta.dirname, '..', '..', '..'));
  });
});
