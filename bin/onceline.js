#!/usr/bin/env node
// `npx onceline <command>`: the admin CLI from the build in dist/.
import '../dist/cli.js';
