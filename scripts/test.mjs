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
if (run('npm', ['run', '--silent', 'build']) !== 0) process.exit(1);
// The tests run in bare Node (jest-light-runner, jest.config.js): no vm modules, so no Node flag.
process.exit(run('npx', ['jest', ...process.argv.slice(2)]));
