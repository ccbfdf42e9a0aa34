import { CommandRunner, Option } from 'nest-commander';

/** Base of every admin command: declares the shared --json flag once. */
export abstract class JsonCommand extends CommandRunner {
  @Option({ flags: '--json', description: 'print exactly one JSON document on stdout' })
  parseJson(): boolean {
    return true;
  }
}
