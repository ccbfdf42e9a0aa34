// Preloaded into a role by a benchmark (`node --import ./bench/statement-counter.mjs`): counts the
// statements the process sends to PostgreSQL (each pg query is one round trip; BEGIN and COMMIT
// count) by their text, and writes them as JSON to $BENCH_STATEMENT_COUNT_FILE every second and
// at exit. For the bench's report only: the product never loads it.
import fs from 'node:fs';
import { createRequire } from 'node:module';

const file = process.env.BENCH_STATEMENT_COUNT_FILE;
if (file) {
  const pg = createRequire(new URL('../package.json', import.meta.url))('pg');
  const counts = new Map();
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(config, ...rest) {
    const text = typeof config === 'string' ? config : (config?.text ?? '');
    const key = text.replace(/\s+/g, ' ').trim().slice(0, 100);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return query.call(this, config, ...rest);
  };
  const write = () => fs.writeFileSync(file, JSON.stringify(Object.fromEntries(counts)));
  setInterval(write, 1000).unref();
  process.on('exit', write);
}
