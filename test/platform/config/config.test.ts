import { describe, expect, it } from '@jest/globals';
import { runNode } from '../../support/run-node.js';

// Each case boots a Node process; a busy 2-core machine can make that slow.
const SLOW = 120_000;

// Each case: a bad environment and the variable the one message must name.
const BAD: Array<[Record<string, string>, string[]]> = [
  [{ PORT: 'abc' }, ['PORT']],
  [{ DATABASE_URL: 'mysql://x' }, ['DATABASE_URL']],
  [{ WEBHOOK_RETRY_SCHEDULE: 'a,b' }, ['WEBHOOK_RETRY_SCHEDULE']],
  [{ REDIS_URL: 'http://127.0.0.1:6379', OUTBOX_BATCH_SIZE: '0' }, ['REDIS_URL', 'OUTBOX_BATCH_SIZE']],
  [{ DATABASE_PREPARED_STATEMENTS: 'yes' }, ['DATABASE_PREPARED_STATEMENTS']],
  // The lanes' connection budgets must leave connections for the API and ingest.
  [{ DATABASE_POOL_SIZE: '10', DATABASE_REALTIME_CONNECTIONS: '5', DATABASE_BULK_CONNECTIONS: '4' }, ['DATABASE_REALTIME_CONNECTIONS', 'DATABASE_BULK_CONNECTIONS']],
];

describe('invalid configuration stops start-up with one clear message', () => {
  it.each(BAD)('node dist/main.js api with %j', async (env, named) => {
    const run = await runNode(['dist/main.js', 'api'], env);
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Invalid configuration: /);
    for (const variable of named) expect(lines[0]).toContain(variable);
  }, SLOW);

  it.each(BAD)('node dist/cli.js outbox:status --json with %j', async (env, named) => {
    const run = await runNode(['dist/cli.js', 'outbox:status', '--json'], env);
    expect(run.code).not.toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.errors).toHaveLength(1);
    for (const variable of named) expect(doc.errors[0].detail).toContain(variable);
  }, SLOW);

  it('a password in a bad URL is not repeated in the message (it ends up in logs)', async () => {
    const run = await runNode(['dist/main.js', 'api'], { DATABASE_URL: 'mysql://bob:hunter2@db.internal/x' });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('DATABASE_URL');
    expect(run.stderr).not.toContain('hunter2');
  }, SLOW);

  it('an unknown role is refused with the list of roles', async () => {
    const run = await runNode(['dist/main.js', 'everything'], {});
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('api, worker, relay, sandbox, all');
  }, SLOW);
});
