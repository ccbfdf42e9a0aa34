import 'reflect-metadata';
import { runCli } from './cli-program.js';

// The admin CLI (`onceline <command>`, bin/onceline.js). A failed command exits at once, as it
// always has, whatever its connections are still doing.
const code = await runCli(process.argv.slice(2), process.env);
if (code !== 0) process.exit(code);
