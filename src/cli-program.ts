import { printError, processStreams, withCliStreams, type CliStreams } from './platform/cli/output.js';
import { type AppConfig, ConfigError, loadConfig } from './platform/config/app-config.js';
import { redactUrl, withDotEnv, type LoadedEnv } from './platform/config/dot-env.js';
import { createPino, PinoNestLogger } from './platform/logging/logger.js';

/** Thrown to end commander's parse where it would otherwise exit the process (its code is already set). */
class CommanderExit extends Error {}

interface Commandish {
  commands: readonly Commandish[];
  exitOverride(handler: (err: Error) => never): unknown;
}

/**
 * One run of the admin CLI: `argv` as after `onceline` (a command and its options), `env` its
 * whole environment (plus .env). Writes to `streams` (the process's own by default) and returns
 * the exit code; never exits the process, so a test can run a command in its own process
 * (test/support/run-cli.ts) where the process is not what it tests. src/cli.ts is the program.
 */
export async function runCli(argv: string[], env: Record<string, string | undefined>, streams: CliStreams = processStreams()): Promise<number> {
  return withCliStreams(streams, async () => {
    const json = argv.includes('--json');
    let loaded: LoadedEnv | undefined;
    let config: AppConfig | undefined;
    let code = 0;
    // Under --json exactly one document: an error reported once is not reported again.
    let reported = false;
    const report = (err: unknown) => {
      if (!reported) printError(json, err);
      reported = true;
    };
    const fail = (err: unknown) => {
      if (err instanceof CommanderExit) return;
      report(explainDatabaseError(err, loaded, config));
      code = 1;
    };
    // Help needs no configuration and connects to nothing: it answers on a machine with no database yet.
    const help = asksForHelp(argv);
    try {
      try {
        if (!help) {
          loaded = withDotEnv(env);
          config = loadConfig(loaded.env);
        }
      } catch (err) {
        if (err instanceof ConfigError) {
          fail(err);
          return code;
        }
        throw err;
      }
      // Loaded once the configuration is known good: a bad setting is reported without booting Nest.
      const { CliModule, CommandFactory, CommandRunnerService } = await loadCliModules();
      const root = !config ? CliModule.forHelp() : argv[0] === 'migrate' ? CliModule.forMigrate(config) : CliModule.forRoot(config);
      // commander's own exits (help, version) are not failures; every other one is reported.
      const exit = (err: Error): never => {
        const c = (err as { code?: string }).code ?? '';
        if (!(c.startsWith('commander.help') || c === 'commander.version' || c === 'commander.helpDisplayed')) fail(err);
        throw new CommanderExit();
      };
      const app = await CommandFactory.createWithoutRunning(root, {
        // Boot chatter stays out of the admin's way unless debugging was asked for.
        logger: new PinoNestLogger(createPino(config && ['debug', 'trace'].includes(config.LOG_LEVEL) ? config.LOG_LEVEL : 'warn')),
        cliName: 'onceline',
        // A database that does not answer at boot is reported like any failure, not by Nest's own exit.
        abortOnError: false,
        outputConfiguration: {
          writeOut: (text) => streams.out(text),
          writeErr: (text) => streams.err(text),
          // --json is honoured where commander prints a usage error (missing argument, unknown option).
          outputError: (message, write) => (json ? report(new Error(message.replace(/^error: /, '').trim())) : write(message)),
        },
        serviceErrorHandler: fail,
        errorHandler: exit,
      });
      try {
        // nest-commander sets its exit handler on the program after the subcommands exist, so
        // commander would exit the process on a subcommand's usage error: each gets it too.
        const runner = app.get(CommandRunnerService);
        const overrideAll = (command: Commandish) => {
          command.exitOverride(exit);
          command.commands.forEach(overrideAll);
        };
        overrideAll((runner as unknown as { commander: Commandish }).commander);
        await runner.run(['node', 'onceline', ...argv]);
      } finally {
        await app.close();
      }
    } catch (err) {
      fail(err);
    }
    return code !== 0 ? code : (streams.exitCode ?? 0);
  });
}

/**
 * Whether `argv` asks only for help: `--help` or `-h` (before a `--`, after which words are a
 * command's own), `help [command]` (commander's help command), or no command at all (commander
 * answers with the list of commands).
 */
export function asksForHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  const words = end === -1 ? argv : argv.slice(0, end);
  return words.length === 0 || words[0] === 'help' || words.some((word) => word === '--help' || word === '-h');
}

/**
 * The modules a command needs beyond its configuration: Nest, the commands, nest-commander. A
 * process that runs many commands (the tests' CLI host) loads them before its first. One after
 * the other: nest-commander require()s @nestjs/common, which Node 22 refuses while a concurrent
 * import() of the same ES module is still loading it.
 */
export async function loadCliModules() {
  const { CliModule } = await import('./cli.module.js');
  const { CommandFactory, CommandRunnerService } = await import('nest-commander');
  return { CliModule, CommandFactory, CommandRunnerService };
}

/** Errors that mean PostgreSQL could not be reached or refused us, not that a command went wrong. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', '28P01', '28000', '3D000', '57P03']);

/** A database the CLI could not use, explained: never migrated, or which URL was tried and where it came from (environment, .env, default), its password hidden. */
function explainDatabaseError(err: unknown, loaded: LoadedEnv | undefined, config: AppConfig | undefined): unknown {
  const e = err as { code?: string; message?: string };
  if (!loaded || !config) return err;
  // 42P01 (a table missing): reached, but never migrated.
  if (e?.code === '42P01') return new Error(`the database at ${redactUrl(config.DATABASE_URL)} has no Onceline tables yet: run \`onceline migrate\` (npm run migrate) first`);
  if (!UNREACHABLE.has(e?.code ?? '') && !/ECONNREFUSED|ENOTFOUND|getaddrinfo|password authentication failed|database "[^"]*" does not exist/.test(e?.message ?? '')) return err;
  const source = loaded.sourceOf('DATABASE_URL');
  const where = source === '.env' ? `.env (${loaded.file})` : source === 'environment' ? 'the environment' : 'the default; set DATABASE_URL in the environment or .env';
  return new Error(`cannot reach PostgreSQL at ${redactUrl(config.DATABASE_URL)} (DATABASE_URL from ${where}): ${e.message}`);
}
