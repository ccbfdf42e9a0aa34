// A jest reporter for bench/suite-files.mjs: for each test file, its wall time and the whole
// machine's busy CPU (bench/lib.mjs machineCpuSeconds: every process, PostgreSQL, Redis and the
// programs the file starts included) from its start to its result. Only meaningful with one file
// at a time (--maxWorkers=1): with two running, each delta holds the other's CPU too.
// Writes the rows as JSON to SUITE_FILES_OUT after every file, so a run cut short keeps what it had.
import { writeFileSync } from 'node:fs';
import { machineCpuSeconds } from './lib.mjs';

export default class SuiteFilesReporter {
  started = new Map();
  rows = [];

  onTestFileStart(test) {
    this.started.set(test.path, { at: Date.now(), busy: machineCpuSeconds().busy });
  }

  onTestFileResult(test, result) {
    const start = this.started.get(test.path);
    if (!start) return;
    this.rows.push({
      file: test.path.replace(/^.*?\/(src|test)\//, '$1/'),
      wall: (Date.now() - start.at) / 1000,
      cpu: machineCpuSeconds().busy - start.busy,
      failed: result.numFailingTests > 0 || !!result.testExecError,
    });
    writeFileSync(process.env.SUITE_FILES_OUT, JSON.stringify(this.rows));
  }
}
