// Writes test/support/test-durations.json (seconds per test file, the slowest first) from a jest
// JSON report: `npm test -- --json --outputFile=/tmp/suite.json && node scripts/test-durations.mjs /tmp/suite.json`.
// The sequencer (test/support/sequencer.mjs) starts the longest files first on a fresh clone,
// where jest has no timings cached yet, so no long file starts last and runs on alone.
import { readFileSync, writeFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2] ?? '/tmp/suite.json', 'utf8'));
// Paths relative to the checkout the report was made in (it may be another clone): what follows its src/ or test/.
const relative = (path) => path.replace(/^.*?\/(src|test)\//, '$1/');
const seconds = Object.fromEntries(
  report.testResults
    .map((r) => [relative(r.name), Math.round((r.endTime - r.startTime) / 100) / 10])
    .sort((a, b) => b[1] - a[1]),
);
writeFileSync(new URL('../test/support/test-durations.json', import.meta.url), `${JSON.stringify(seconds, null, 1)}\n`);
console.log(`${Object.keys(seconds).length} files`);
