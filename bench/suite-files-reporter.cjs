// A jest reporter for bench/suite-files.mjs: for each test file, its wall time and the whole
// machine's busy CPU (/proc/stat: every process, PostgreSQL, Redis and the programs the file
// starts included) from its start to its result. Only meaningful with one file at a time
// (--maxWorkers=1): with two running, each delta holds the other's CPU too.
// Writes the rows as JSON to SUITE_FILES_OUT after every file, so a run cut short keeps what it had.
const { readFileSync, writeFileSync } = require('node:fs');

const ticksPerSecond = Number(process.env.SUITE_FILES_CLOCK_TICKS || 100);

function busySeconds() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = fields[3] + fields[4];
  return (fields.reduce((a, b) => a + b, 0) - idle) / ticksPerSecond;
}

class SuiteFilesReporter {
  constructor() {
    this.started = new Map();
    this.rows = [];
  }

  onTestFileStart(test) {
    this.started.set(test.path, { at: Date.now(), busy: busySeconds() });
  }

  onTestFileResult(test, result) {
    const start = this.started.get(test.path);
    if (!start) return;
    this.rows.push({
      file: test.path.replace(/^.*?\/(src|test)\//, '$1/'),
      wall: (Date.now() - start.at) / 1000,
      cpu: busySeconds() - start.busy,
      failed: result.numFailingTests > 0 || !!result.testExecError,
    });
    writeFileSync(process.env.SUITE_FILES_OUT, JSON.stringify(this.rows));
  }
}

module.exports = SuiteFilesReporter;
