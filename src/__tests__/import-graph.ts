import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** One relative import: `from` imports `to`, both paths relative to the root read (`a/b.ts`). */
export interface ImportEdge {
  from: string;
  to: string;
}

/** Every .ts file under `dir`, specs beside the code (__tests__) included. */
export function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? allFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The relative imports of every .ts file under `root`: `import … from`, `export … from`, a bare
 * `import '…'` and `import('…')`. `import type` counts like any import: two files whose types
 * need each other cannot be read, moved or reasoned about apart any more than two whose code
 * does, so a type-only circle is a circle.
 */
export function readImports(root: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const path of allFiles(root)) {
    const from = relative(root, path);
    const text = readFileSync(path, 'utf8');
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const to = relative(root, resolve(dirname(path), match[1])).replace(/\.js$/, '.ts');
      edges.push({ from, to });
    }
  }
  return edges;
}

/**
 * The import circles among `edges`, one per knot of nodes that all reach each other (Tarjan's
 * strongly connected components): each reported as one actual circle through the knot's first
 * node in sorted order, `[a, b, c, a]`, the shortest there is. Empty when the graph has none.
 */
export function cyclesOf(edges: Iterable<ImportEdge>): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    next.set(from, (next.get(from) ?? new Set()).add(to));
    if (!next.has(to)) next.set(to, new Set());
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const knots: string[][] = [];
  const connect = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node)!) {
      if (!index.has(to)) {
        connect(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const knot: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      knot.push(member);
    } while (member !== node);
    if (knot.length > 1 || next.get(node)!.has(node)) knots.push(knot.sort());
  };
  for (const node of [...next.keys()].sort()) if (!index.has(node)) connect(node);
  return knots.map((knot) => circleThrough(knot[0], new Set(knot), next)).sort((a, b) => a[0].localeCompare(b[0]));
}

/** The shortest circle from `start` back to it inside `knot` (breadth first). */
function circleThrough(start: string, knot: Set<string>, next: Map<string, Set<string>>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of next.get(node)!) {
      if (!knot.has(to)) continue;
      if (to === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0])!);
        return [...path, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}
