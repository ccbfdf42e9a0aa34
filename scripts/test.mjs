// `npm test`: make sure PostgreSQL and Redis answer (starting local ones if needed), build dist/
// (the CLI and process tests run the built program), then run the whole jest suite.
import { spawnSync } from 'node:child_process';
import { ensureServices, ROOT } from './services.mjs';

try {
  await ensureServices();
} catch (err) {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
}
const run = (cmd, args, env = process.env) => spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit', env }).status ?? 1;
// Node itself, not npm run / npx (0.2 and 0.3 s of their own each time).
if (run(process.execPath, ['scripts/build.mjs']) !== 0) process.exit(1);
// The tests run in bare Node (jest-light-runner, jest.config.js): no vm modules, so no Node flag.
process.exit(run(process.execPath, ['node_modules/jest/bin/jest.js', ...process.argv.slice(2)]));
