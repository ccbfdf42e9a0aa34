import 'reflect-metadata';
import { runCli } from './cli-program.js';
import { cacheCompiledCode } from './platform/lifecycle/compile-cache.js';

// The admin CLI (`onceline <command>`, bin/onceline.js). A failed command exits at once, as it
// always has, whatever its connections are still doing.
// Node writes the compile cache as the process exits, process.exit() included.
cacheCompiledCode();
const code = await runCli(process.argv.slice(2), process.env);
if (code !== 0) process.exit(code);
