import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { CliModule } from './cli.module.js';
import { printError } from './platform/cli/output.js';
import { ConfigError, loadConfig } from './platform/config/app-config.js';
import { createPino, PinoNestLogger } from './platform/logging/logger.js';

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  // Under --json exactly one document: an error reported once is not reported again.
  let reported = false;
  const report = (err: unknown) => {
    if (!reported) printError(json, err);
    reported = true;
  };
  const fail = (err: unknown) => {
    report(err);
    process.exit(1);
  };
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) return fail(err);
    throw err;
  }
  const root = process.argv[2] === 'migrate' ? CliModule.forMigrate(config) : CliModule.forRoot(config);
  await CommandFactory.run(root, {
    // Boot chatter stays out of the admin's way unless debugging was asked for.
    logger: new PinoNestLogger(createPino(['debug', 'trace'].includes(config.LOG_LEVEL) ? config.LOG_LEVEL : 'warn')),
    cliName: 'onceline',
    // A database that does not answer at boot is reported like any failure, not by Nest's own exit.
    abortOnError: false,
    // commander exits on a subcommand's usage error (missing argument, unknown option) without
    // calling errorHandler, so --json is honoured where commander prints the error.
    outputConfiguration: {
      outputError: (message, write) => (json ? report(new Error(message.replace(/^error: /, '').trim())) : write(message)),
    },
    serviceErrorHandler: fail,
    errorHandler: (err) => {
      // commander's own exits (help, version) are not failures
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('commander.help') || code === 'commander.version' || code === 'commander.helpDisplayed') process.exit(0);
      fail(err);
    },
  });
}

main().catch((err) => {
  printError(process.argv.includes('--json'), err);
  process.exit(1);
});
