import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allFiles, cyclesOf, readImports, type ImportEdge } from './import-graph.js';

/**
 * The folder tree is the architecture, and this spec keeps it honest by reading every import:
 *   telephony/  public telephony knowledge (E.164, segments, dev credentials): imports nothing of ours
 *   platform/   infrastructure (config, database, outbox, redis, http, cli, metrics, health)
 *   carriers/   the carrier contract and adapters: the only place a carrier's words appear
 *   modules/    features (accounts, numbers, ingest, messaging, billing, webhooks, ...)
 *   sandbox/    a stand-in carrier for development: knows what a carrier would, nothing more
 *   *.ts        composition roots (main, cli, app.module, cli.module, create-app)
 * Dependencies point down (modules → carriers → platform → telephony), never back, the
 * folders of one layer form no cycle, and no file imports itself back through others (a circle
 * of files, `import type` included: see import-graph.ts).
 */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..');

type Layer = 'root' | 'telephony' | 'platform' | 'carriers' | 'modules' | 'sandbox';

const MAY_IMPORT: Record<Layer, Layer[]> = {
  root: ['root', 'telephony', 'platform', 'carriers', 'modules', 'sandbox'],
  modules: ['modules', 'carriers', 'platform', 'telephony'],
  carriers: ['carriers', 'platform', 'telephony'],
  platform: ['platform', 'telephony'],
  telephony: ['telephony'],
  sandbox: ['sandbox', 'telephony', 'platform', 'carriers'],
};

/** What the sandbox may take from product folders: what any carrier knows, public signing helpers. */
const SANDBOX_MAY_USE = [/^carriers\/[a-z]+\/[a-z]+-signature\.ts$/, /^platform\/net\//];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === '__tests__' ? [] : sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Source text without its comments (a comment may mention what the code may not name). */
function codeOf(path: string): string {
  return readFileSync(path, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

function layerOf(file: string): Layer {
  const top = file.split('/')[0];
  return file.includes('/') ? (top as Layer) : 'root';
}

/**
 * modules/messaging, platform/outbox, carriers, sandbox, ...: the units cycles are counted
 * between. Carriers is one unit: its contract (carriers/*.ts) and its adapters know each other.
 */
function unitOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return 'root';
  if (['platform', 'modules'].includes(parts[0]) && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0];
}

const imports: ImportEdge[] = readImports(SRC);

/** Imports of product code (the specs beside it are held to the layers only by the platform rule below). */
const productImports = imports.filter(({ from }) => !from.includes('__tests__/'));

/**
 * What the features declare, read from their own files: job and queue names (`*.jobs.ts`,
 * defineJob) and customer event types (`*.events.ts`, declareCustomerEventTypes).
 */
const MODULES = join(SRC, 'modules');
const declarationFiles = allFiles(MODULES).filter((path) => /\.(jobs|events)\.ts$/.test(path));
const declared = await Promise.all(declarationFiles.map(async (path) => Object.values(await import(path)) as unknown[]));
const featureNames = new Set<string>();
for (const value of declared.flat()) {
  if (Array.isArray(value)) value.forEach((type) => featureNames.add(type as string));
  else if (value && typeof value === 'object' && 'name' in value && 'queue' in value) {
    featureNames.add((value as { name: string }).name);
    featureNames.add((value as { queue: string }).queue);
  }
}

describe('the folder tree is the architecture', () => {
  it('reads the imports of the whole tree', () => {
    expect(imports.length).toBeGreaterThan(100);
  });

  it('points dependencies down: features → carriers → platform → telephony, never back', () => {
    const wrong = productImports
      .filter(({ from, to }) => !MAY_IMPORT[layerOf(from)].includes(layerOf(to)))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('lets the sandbox use only what a carrier knows', () => {
    const wrong = productImports
      .filter(({ from, to }) => layerOf(from) === 'sandbox' && ['platform', 'carriers'].includes(layerOf(to)))
      .filter(({ to }) => !SANDBOX_MAY_USE.some((allowed) => allowed.test(to)))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('never imports the sandbox from product code (only a composition root starts it)', () => {
    const wrong = productImports
      .filter(({ from, to }) => layerOf(to) === 'sandbox' && !['sandbox', 'root'].includes(layerOf(from)))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('reaches another module only through what it exports, never its controllers', () => {
    const wrong = productImports
      .filter(({ from, to }) => to.endsWith('.controller.ts') && unitOf(from) !== unitOf(to))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('runs SQL one way outside the platform: exec / queryRows (platform/database/tx.ts), never dataSource.query, tx.query or manager.query', () => {
    const wrong = sourceFiles(SRC)
      .filter((path) => layerOf(relative(SRC, path)) !== 'platform' && /(\.dataSource|\btx|\bmanager)\.query\(/.test(readFileSync(path, 'utf8')))
      .map((path) => relative(SRC, path));
    expect(wrong).toEqual([]);
  });

  it('has no cycle between folders', () => {
    const edges = productImports.map(({ from, to }) => ({ from: unitOf(from), to: unitOf(to) })).filter(({ from, to }) => from !== to);
    expect(cyclesOf(edges).map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  it('has no circle between files: each is shown as the files it runs through', () => {
    expect(cyclesOf(productImports).map((cycle) => cycle.join(' → '))).toEqual([]);
  });

  it('finds a circle planted in a small tree, type-only and re-export edges included, and names its files', () => {
    const root = mkdtempSync(join(tmpdir(), 'onceline-circle-'));
    try {
      const plant = (file: string, text: string) => {
        mkdirSync(dirname(join(root, file)), { recursive: true });
        writeFileSync(join(root, file), text);
      };
      plant('a.ts', "import { b } from './b.js';\nexport const a = b;\n");
      plant('b.ts', "import type { C } from './deep/c.js';\nexport const b: C = 1;\n");
      plant('deep/c.ts', "export { a } from '../a.js';\nexport type C = number;\n");
      plant('leaf.ts', "import { a } from './a.js';\nexport const leaf = a;\n");
      plant('self.ts', "export const self = () => import('./self.js');\n");
      plant('two/x.ts', "import './y.js';\n");
      plant('two/y.ts', "import { x } from './x.js';\n");
      expect(cyclesOf(readImports(root))).toEqual([
        ['a.ts', 'b.ts', 'deep/c.ts', 'a.ts'],
        ['self.ts', 'self.ts'],
        ['two/x.ts', 'two/y.ts', 'two/x.ts'],
      ]);
      // The same tree with the circles cut: nothing reported.
      plant('deep/c.ts', 'export type C = number;\n');
      plant('self.ts', 'export const self = 1;\n');
      plant('two/y.ts', 'export const y = 1;\n');
      expect(cyclesOf(readImports(root))).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  describe('platform names no feature', () => {
    const platformFiles = allFiles(join(SRC, 'platform'));

    it('finds what the features declare: their jobs, queues and customer event types', () => {
      expect(declarationFiles.length).toBeGreaterThanOrEqual(8);
      for (const name of ['dispatch-message', 'call-commands', 'carrier-events', 'message.received', 'number.released']) expect(featureNames).toContain(name);
    });

    it('declares jobs only in a module\'s *.jobs.ts and event types only in its *.events.ts (so the list above is whole)', () => {
      const wrong = allFiles(SRC)
        .filter((path) => !path.includes('__tests__/'))
        .map((path) => relative(SRC, path))
        .filter((file) => {
          const code = codeOf(join(SRC, file));
          const jobs = /\bdefineJob\b</.test(code) || /\bdefineJob\(/.test(code);
          const events = /\bdeclareCustomerEventTypes\(/.test(code);
          const jobsOk = /^modules\/[a-z-]+\/[a-z-]+\.jobs\.ts$/.test(file) || file.startsWith('platform/outbox/');
          const eventsOk = /^modules\/[a-z-]+\/[a-z-]+\.events\.ts$/.test(file) || file === 'modules/webhooks/event-types.ts';
          return (jobs && !jobsOk) || (events && !eventsOk);
        });
      expect(wrong).toEqual([]);
    });

    it('imports nothing from src/modules/, specs beside the code included', () => {
      const wrong = imports.filter(({ from, to }) => layerOf(from) === 'platform' && layerOf(to) === 'modules').map(({ from, to }) => `${from} → ${to}`);
      expect(wrong).toEqual([]);
    });

    it('holds no feature job, queue or customer event type name in its code (comments aside), specs included', () => {
      const wrong = platformFiles.flatMap((path) => {
        const code = codeOf(path);
        return [...featureNames].filter((name) => ['\'', '"', '`'].some((q) => code.includes(`${q}${name}${q}`))).map((name) => `${relative(SRC, path)}: ${name}`);
      });
      expect(wrong).toEqual([]);
    });

    it('keeps platform/database generic: nothing of the outbox or its jobs in its code', () => {
      const wrong = allFiles(join(SRC, 'platform/database'))
        .filter((path) => /outbox|\bjobs?\b|Job|jobCtes/i.test(codeOf(path)))
        .map((path) => relative(SRC, path));
      expect(wrong).toEqual([]);
    });
  });
});
