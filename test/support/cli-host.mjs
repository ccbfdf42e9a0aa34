// One Node process that runs admin CLI commands for a test worker (test/support/run-cli.ts): the
// built program's runCli (dist/cli-program.js, bundled like dist/cli.js), each command with its own arguments, environment
// and output, so a worker pays the boot of Node and the program's modules once, not per command.
// Plain ESM run by node, not by jest: nest-commander require()s the ES modules of Nest 12, which
// jest's module system cannot.
// The compile cache as src/cli.ts keeps it (Node ≥ 22.10; nothing on 20), written once loaded:
// the host ends by SIGTERM or with its test worker.
// With its worker: the IPC channel closes when the worker exits or is killed.
process.on('disconnect', () => process.exit(0));
const { default: module } = await import('node:module');
module.enableCompileCache?.();
const { loadCliModules, runCli } = await import('../../dist/cli-program.js');
// Before the first command, so its boot is paid while the test file sets up (warmCliHost).
await loadCliModules();
module.flushCompileCache?.();

process.on('message', async ({ id, args, env }) => {
  let stdout = '';
  let stderr = '';
  let code;
  try {
    code = await runCli(args, env, { out: (text) => void (stdout += text), err: (text) => void (stderr += text) });
  } catch (err) {
    code = 1;
    stderr += `cli-host: ${err.stack ?? err}\n`;
  }
  process.send({ id, code, stdout, stderr });
});
process.send({ ready: true });
