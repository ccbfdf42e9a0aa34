import 'reflect-metadata';
import { printError } from './platform/cli/output.js';
import { type AppConfig, ConfigError, loadConfig } from './platform/config/app-config.js';
import { redactUrl, withDotEnv, type LoadedEnv } from './platform/config/dot-env.js';
import { createPino, PinoNestLogger } from './platform/logging/logger.js';

/** The configuration read, kept for error messages that must say where a setting came from. */
let loaded: LoadedEnv | undefined;
let config: AppConfig | undefined;

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  // Under --json exactly one document: an error reported once is not reported again.
  let reported = false;
  const report = (err: unknown) => {
    if (!reported) printError(json, err);
    reported = true;
  };
  const fail = (err: unknown) => {
    report(explainDatabaseError(err));
    process.exit(1);
  };
  try {
    loaded = withDotEnv();
    config = loadConfig(loaded.env);
  } catch (err) {
    if (err instanceof ConfigError) return fail(err);
    throw err;
  }
  // Loaded once the configuration is known good: a bad setting is reported without booting Nest.
  // One after the other: nest-commander require()s @nestjs/common, which Node 22 refuses while a
  // concurrent import() of the same ES module is still loading it.
  const { CliModule } = await import('./cli.module.js');
  const { CommandFactory } = await import('nest-commander');
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

/** Errors that mean PostgreSQL could not be reached or refused us, not that a command went wrong. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', '28P01', '28000', '3D000', '57P03']);

/** A database the CLI could not use, explained: never migrated, or which URL was tried and where it came from (environment, .env, default), its password hidden. */
function explainDatabaseError(err: unknown): unknown {
  const e = err as { code?: string; message?: string };
  if (!loaded || !config) return err;
  // 42P01 (a table missing): reached, but never migrated.
  if (e?.code === '42P01') return new Error(`the database at ${redactUrl(config.DATABASE_URL)} has no Onceline tables yet: run \`onceline migrate\` (npm run migrate) first`);
  if (!UNREACHABLE.has(e?.code ?? '') && !/ECONNREFUSED|ENOTFOUND|getaddrinfo|password authentication failed|database "[^"]*" does not exist/.test(e?.message ?? '')) return err;
  const source = loaded.sourceOf('DATABASE_URL');
  const where = source === '.env' ? `.env (${loaded.file})` : source === 'environment' ? 'the environment' : 'the default; set DATABASE_URL in the environment or .env';
  return new Error(`cannot reach PostgreSQL at ${redactUrl(config.DATABASE_URL)} (DATABASE_URL from ${where}): ${e.message}`);
}

main().catch((err) => {
  printError(process.argv.includes('--json'), explainDatabaseError(err));
  process.exit(1);
});
