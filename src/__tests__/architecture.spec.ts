import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder tree is the architecture, and this spec keeps it honest by reading every import:
 *   telephony/  public telephony knowledge (E.164, segments, dev credentials): imports nothing of ours
 *   platform/   infrastructure (config, database, outbox, redis, http, cli, metrics, health)
 *   carriers/   the carrier contract and adapters: the only place a carrier's words appear
 *   modules/    features (accounts, numbers, ingest, messaging, billing, webhooks, ...)
 *   sandbox/    a stand-in carrier for development: knows what a carrier would, nothing more
 *   *.ts        composition roots (main, cli, app.module, cli.module, create-app)
 * Dependencies point down (modules → carriers → platform → telephony), never back, and the
 * folders of one layer form no cycle.
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

const imports: { from: string; to: string }[] = [];
for (const path of sourceFiles(SRC)) {
  const from = relative(SRC, path);
  const text = readFileSync(path, 'utf8');
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    const to = relative(SRC, resolve(dirname(path), match[1])).replace(/\.js$/, '.ts');
    imports.push({ from, to });
  }
}

describe('the folder tree is the architecture', () => {
  it('reads the imports of the whole tree', () => {
    expect(imports.length).toBeGreaterThan(100);
  });

  it('points dependencies down: features → carriers → platform → telephony, never back', () => {
    const wrong = imports
      .filter(({ from, to }) => !MAY_IMPORT[layerOf(from)].includes(layerOf(to)))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('lets the sandbox use only what a carrier knows', () => {
    const wrong = imports
      .filter(({ from, to }) => layerOf(from) === 'sandbox' && ['platform', 'carriers'].includes(layerOf(to)))
      .filter(({ to }) => !SANDBOX_MAY_USE.some((allowed) => allowed.test(to)))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('never imports the sandbox from product code (only a composition root starts it)', () => {
    const wrong = imports
      .filter(({ from, to }) => layerOf(to) === 'sandbox' && !['sandbox', 'root'].includes(layerOf(from)))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('reaches another module only through what it exports, never its controllers', () => {
    const wrong = imports
      .filter(({ from, to }) => to.endsWith('.controller.ts') && unitOf(from) !== unitOf(to))
      .map(({ from, to }) => `${from} → ${to}`);
    expect(wrong).toEqual([]);
  });

  it('runs SQL one way outside the platform: exec / queryRows (platform/database/tx.ts), never dataSource.query', () => {
    const wrong = sourceFiles(SRC)
      .filter((path) => layerOf(relative(SRC, path)) !== 'platform' && /\.dataSource\.query\(/.test(readFileSync(path, 'utf8')))
      .map((path) => relative(SRC, path));
    expect(wrong).toEqual([]);
  });

  it('has no cycle between folders', () => {
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of imports) {
      const [a, b] = [unitOf(from), unitOf(to)];
      if (a !== b) edges.set(a, (edges.get(a) ?? new Set()).add(b));
    }
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (node: string, path: string[]) => {
      if (state.get(node) === 'done') return;
      if (state.get(node) === 'open') {
        cycles.push([...path.slice(path.indexOf(node)), node].join(' → '));
        return;
      }
      state.set(node, 'open');
      for (const next of edges.get(node) ?? []) visit(next, [...path, node]);
      state.set(node, 'done');
    };
    for (const node of edges.keys()) visit(node, []);
    expect(cycles).toEqual([]);
  });
});
