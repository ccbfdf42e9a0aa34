// Types of bench/bench-doc.mjs, for its spec (src/__tests__/benchmarks-doc.spec.ts).
export interface BenchSection {
  id: string;
  body: string;
}
export function parseBenchDoc(doc: string): { head: string; sections: BenchSection[]; tail: string };
export function mergeBenchSections(input: { doc?: string; fresh: Record<string, string>; order: string[]; head?: string }): string;
export function reportAsMarkdown(output: string): string;
export function renderBenchSection(run: {
  title: string;
  command: string;
  date: string;
  machine: string;
  status: string;
  seconds: string | number;
  load: string | number;
  output: string;
}): string;
