// docs/benchmarks.md holds one section per benchmark, each between markers:
//
//   <!-- bench:relay -->
//   ## Relay: …
//   …
//   <!-- /bench:relay -->
//
// `npm run bench` (bench/all.mjs) rewrites the sections of the benchmarks it ran and keeps every
// other section as it was, so a run of one benchmark (`node bench/all.mjs relay`), or a benchmark
// that failed to run, never loses another one's figures. Pure functions: text in, text out.

const SECTION = /<!-- bench:([\w-]+) -->\n([\s\S]*?)\n?<!-- \/bench:\1 -->/g;

/** The head (text before the first section), the sections in file order, and the tail. */
export function parseBenchDoc(doc) {
  const sections = [];
  let head;
  let last = 0;
  for (const m of doc.matchAll(SECTION)) {
    if (head === undefined) head = doc.slice(0, m.index);
    sections.push({ id: m[1], body: m[2].trim() });
    last = m.index + m[0].length;
  }
  return { head: (head ?? doc).trimEnd(), sections, tail: head === undefined ? '' : doc.slice(last).trim() };
}

/**
 * The document with `fresh` (id → section body) in place of those sections. Sections come in
 * `order` (the benchmarks' list); a section of the document that the list does not name (a
 * benchmark run by hand, one since taken out of the list) stays after them, where it was among
 * its kind. `head` replaces the document's head only when the document has none (a first run).
 */
export function mergeBenchSections({ doc, fresh, order, head }) {
  const parsed = parseBenchDoc(doc ?? '');
  const old = new Map(parsed.sections.map((s) => [s.id, s.body]));
  const ids = [...order, ...parsed.sections.map((s) => s.id).filter((id) => !order.includes(id))];
  const bodies = ids
    .map((id) => [id, fresh[id]?.trim() ?? old.get(id)])
    .filter(([, body]) => body !== undefined)
    .map(([id, body]) => `<!-- bench:${id} -->\n${body}\n<!-- /bench:${id} -->`);
  const top = parsed.head || head?.trimEnd() || '';
  return [top, ...bodies, parsed.tail].filter((part) => part !== '').join('\n\n') + '\n';
}

/** One level of a JSON report as table rows, nested keys joined by dots. */
function rows(value, path) {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([key, inner]) => rows(inner, path ? `${path}.${key}` : key));
  }
  const text = Array.isArray(value) ? value.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', ') : String(value);
  return [`| ${path} | ${text.replaceAll('|', '\\|')} |`];
}

/**
 * A benchmark's report as Markdown: a JSON report (what relay, ingest and webhooks print) becomes
 * one `measure | value` table; a Markdown report (e2e, messaging, calls) stays as it is. What
 * follows a JSON document (a summary line) is kept below the table.
 */
export function reportAsMarkdown(output) {
  const text = output.trim();
  const close = { '{': '\n}', '[': '\n]' }[text[0]];
  const end = close && text.includes(close) ? text.indexOf(close) + 2 : 0;
  if (!end) return text;
  let report;
  try {
    report = JSON.parse(text.slice(0, end));
  } catch {
    return text;
  }
  const table = ['| measure | value |', '|---|---|', ...rows(report, '')].join('\n');
  return [table, text.slice(end).trim()].filter(Boolean).join('\n\n');
}

/** The section of one benchmark's run: its title, command, date, machine, outcome and report. */
export function renderBenchSection({ title, command, date, machine, status, seconds, load, output }) {
  return [
    `## ${title}`,
    `Command: \`${command}\` · run ${date} by \`npm run bench\` · ${status}, ${seconds} s, load average ${load} at its start\n` +
      `Machine: ${machine}`,
    reportAsMarkdown(output) || '(no report: the run printed nothing)',
  ].join('\n\n');
}
