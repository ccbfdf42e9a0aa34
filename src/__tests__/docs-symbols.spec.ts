import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Docs that name code keep naming code that exists: every backticked symbol in README.md and
 * docs/**.md (`ClassName`, `ClassName.method`, `@Decorator(...)`, `function()`), every repo path
 * and every `npm run <script>` must resolve. A rename that forgets the docs fails here.
 * ALL-CAPS words (SQL, environment variables), snake_case SQL functions and carrier field names
 * are not symbols of ours;
 * carrier fields appear in src/carriers as strings, so a bare word found in the code passes.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CODE_DIRS = ['src', 'test', 'bench', 'scripts'];

function walk(dir: string, keep: (file: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path, keep) : keep(path) ? [path] : [];
  });
}

const docs = ['README.md', ...walk(join(ROOT, 'docs'), (f) => f.endsWith('.md')).map((f) => f.slice(ROOT.length + 1))];
const codeFiles = CODE_DIRS.flatMap((dir) => walk(join(ROOT, dir), (f) => /\.(ts|mjs|js)$/.test(f) && !f.includes('node_modules')));
const code = new Map(codeFiles.map((file) => [file, readFileSync(file, 'utf8')]));
const allCode = [...code.values()].join('\n');
const scripts = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);

const word = (name: string) => new RegExp(`\\b${name.replace(/[$]/g, '\\$')}\\b`);
const declaration = (name: string) => new RegExp(`\\b(class|interface|type|function|const|enum)\\s+${name}\\b`);
/** A member `name(`, `name:`, `name =` or `get name(`. */
const member = (name: string) => new RegExp(`\\b${name}\\s*(\\(|<|:|=|\\?:)`);

/** Why `span` does not resolve, or undefined when it does (or is not a code reference). */
function unresolved(span: string): string | undefined {
  let m: RegExpMatchArray | null;
  if ((m = span.match(/^npm run ([\w:-]+)/))) return scripts.includes(m[1]) ? undefined : `no npm script ${m[1]}`;
  if ((m = span.match(/^((?:src|test|bench|scripts|migrations|docs)\/[\w./-]*\w)\/?(?::\d+)?$/))) {
    return existsSync(join(ROOT, m[1])) ? undefined : `no file ${m[1]}`;
  }
  if (/^[\w.-]+$/.test(span) && existsSync(join(ROOT, span))) return undefined; // a file at the top (Dockerfile)
  if ((m = span.match(/^([A-Z][a-z]\w*)\.([a-z]\w*)(?:\(.*\))?$/))) {
    const [, owner, method] = m;
    const files = [...code].filter(([, text]) => declaration(owner).test(text));
    if (files.length === 0) return `${owner} is declared nowhere`;
    return files.some(([, text]) => member(method).test(text)) ? undefined : `${owner} has no member ${method}`;
  }
  // A decorator with a literal argument names one use of it: that exact use must exist.
  if ((m = span.match(/^@([A-Z][a-z]\w*\('[^']*'\))$/))) return allCode.includes(`@${m[1]}`) ? undefined : `no ${span} in the code`;
  if ((m = span.match(/^@?([A-Z][a-z]\w*)(?:\(.*\))?$/))) return word(m[1]).test(allCode) ? undefined : `${m[1]} appears nowhere in the code`;
  // snake_case calls are SQL functions (pg_notify(), onceline_id()), not TypeScript.
  if ((m = span.match(/^([a-z][a-zA-Z0-9]*)\((?:[^()]*)\)$/))) return member(m[1]).test(allCode) ? undefined : `no function ${m[1]}`;
  return undefined;
}

describe('docs name only code that exists', () => {
  it.each(docs)('%s', (doc) => {
    const text = readFileSync(join(ROOT, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
    const broken = [...new Set([...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1].trim()))]
      .map((span) => ({ span, why: unresolved(span) }))
      .filter((r) => r.why !== undefined);
    expect(broken).toEqual([]);
  });
});
