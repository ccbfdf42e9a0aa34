import Sequencer from '@jest/test-sequencer';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Seconds per file from a full run (scripts/test-durations.mjs writes it). */
const measured = JSON.parse(readFileSync(new URL('./test-durations.json', import.meta.url), 'utf8'));

/**
 * jest's own order (failed first, then the longest first), with the durations of a measured run
 * where jest has none cached (a fresh clone: CI). By file size alone, the README examples and the
 * npm start test started last and ran on alone for the run's last 60 s.
 */
export default class LongestFirst extends Sequencer {
  time(test) {
    const cached = super.time(test);
    if (cached != null) return cached;
    const seconds = measured[relative(root, test.path)];
    return seconds === undefined ? undefined : seconds * 1000;
  }
}
