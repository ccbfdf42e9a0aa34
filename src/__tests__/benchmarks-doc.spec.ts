import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mergeBenchSections, parseBenchDoc, renderBenchSection, reportAsMarkdown } from '../../bench/bench-doc.mjs';

/**
 * `npm run bench` rewrites docs/benchmarks.md section by section (bench/bench-doc.mjs): the
 * benchmarks that ran get their new figures, every other section stays as it was.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const section = (id: string, body: string) => `<!-- bench:${id} -->\n${body}\n<!-- /bench:${id} -->`;
const DOC = ['# Benchmarks\n\nIntro.', section('relay', '## Relay\n\nold relay'), section('ingest', '## Ingest\n\nold ingest'), section('by-hand', '## Suite\n\nby hand'), 'Tail notes.'].join('\n\n') + '\n';

describe('docs/benchmarks.md, section by section', () => {
  it('reads the head, every section and the tail', () => {
    const parsed = parseBenchDoc(DOC);
    expect(parsed.head).toBe('# Benchmarks\n\nIntro.');
    expect(parsed.sections.map((s) => s.id)).toEqual(['relay', 'ingest', 'by-hand']);
    expect(parsed.sections[1].body).toBe('## Ingest\n\nold ingest');
    expect(parsed.tail).toBe('Tail notes.');
  });

  it('replaces only the sections of the benchmarks that ran, and loses none', () => {
    const out = mergeBenchSections({ doc: DOC, fresh: { ingest: '## Ingest\n\nnew ingest' }, order: ['relay', 'ingest', 'e2e'] });
    const parsed = parseBenchDoc(out);
    expect(parsed.sections).toEqual([
      { id: 'relay', body: '## Relay\n\nold relay' },
      { id: 'ingest', body: '## Ingest\n\nnew ingest' },
      { id: 'by-hand', body: '## Suite\n\nby hand' },
    ]);
    expect(parsed.head).toBe('# Benchmarks\n\nIntro.');
    expect(parsed.tail).toBe('Tail notes.');
  });

  it('adds a benchmark seen for the first time in the list order, and keeps a rewrite stable', () => {
    const out = mergeBenchSections({ doc: DOC, fresh: { e2e: '## E2E\n\nfirst' }, order: ['e2e', 'relay', 'ingest'] });
    expect(parseBenchDoc(out).sections.map((s) => s.id)).toEqual(['e2e', 'relay', 'ingest', 'by-hand']);
    expect(mergeBenchSections({ doc: out, fresh: {}, order: ['e2e', 'relay', 'ingest'] })).toBe(out);
  });

  it('starts a missing document from the head it is given', () => {
    const out = mergeBenchSections({ doc: '', fresh: { relay: '## Relay\n\nx' }, order: ['relay', 'ingest'], head: '# Head' });
    expect(out).toBe(`# Head\n\n${section('relay', '## Relay\n\nx')}\n`);
  });

  it('turns a JSON report into one table, and keeps a Markdown report and what follows the JSON', () => {
    const md = reportAsMarkdown('{\n  "lag": { "p99": 37.8, "rate": 1000 },\n  "ok": true,\n  "steps": [1, 2]\n}\nratio 1.19\n');
    expect(md).toBe('| measure | value |\n|---|---|\n| lag.p99 | 37.8 |\n| lag.rate | 1000 |\n| ok | true |\n| steps | 1, 2 |\n\nratio 1.19');
    expect(reportAsMarkdown('| measure | value |\n|---|---|\n| a | 1 |\n')).toBe('| measure | value |\n|---|---|\n| a | 1 |');
    const rendered = renderBenchSection({ title: 'Relay', command: 'node bench/relay.mjs', date: '2026-12-05T10:00:00.000Z', machine: '2 CPUs', status: 'ok', seconds: 80, load: '1.00', output: '{\n  "a": 1\n}' });
    expect(rendered).toContain('## Relay');
    expect(rendered).toContain('`node bench/relay.mjs`');
    expect(rendered).toContain('2026-12-05T10:00:00.000Z');
    expect(rendered).toContain('Machine: 2 CPUs');
    expect(rendered).toContain('| a | 1 |');
  });

  it('the committed docs/benchmarks.md has a section for every benchmark bench/all.mjs runs', () => {
    const ids = [...readFileSync(resolve(ROOT, 'bench/all.mjs'), 'utf8').matchAll(/\{ id: '([\w-]+)'/g)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(10);
    const inDoc = parseBenchDoc(readFileSync(resolve(ROOT, 'docs/benchmarks.md'), 'utf8')).sections.map((s) => s.id);
    expect(ids.filter((id) => !inDoc.includes(id))).toEqual([]);
  });
});
