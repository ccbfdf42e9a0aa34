import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { databaseUrl, TEST_PG_BASE, TEST_REDIS_URL } from '../../support/env.js';
import { freePort } from '../../support/ports.js';
import { mapLimit, oneDocument, runNode, type NodeRun } from '../../support/run-node.js';
import { runCliHere } from '../../support/run-cli.js';
import { CommandMeta, OptionMeta } from 'nest-commander/src/constants.js';
import { CLI_COMMANDS } from '../../../src/cli.module.js';

// Each command boots a Node process; on a busy 2-core machine a test of several takes a while.
const SLOW = 180_000;


function expectFailure(run: NodeRun, code: string, detail: RegExp): void {
  expect(run.code).not.toBe(0);
  const doc = oneDocument(run);
  expect(doc.errors).toHaveLength(1);
  expect(doc.errors[0]).toEqual(expect.objectContaining({ code, title: expect.any(String) }));
  expect(doc.errors[0].detail).toMatch(detail);
}

/** Each command as its decorators declare it (@Command, @Option): what help must show, read where nest-commander reads it. */
const DECLARED = CLI_COMMANDS.map((command) => {
  const { name, description } = Reflect.getMetadata(CommandMeta, command) as { name: string; description: string };
  const prototype = command.prototype as unknown as Record<string, object>;
  const methods: string[] = [];
  for (let proto: object | null = prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) methods.push(...Object.getOwnPropertyNames(proto));
  const flags = [...new Set(methods)]
    .map((method) => Reflect.getMetadata(OptionMeta, prototype[method]) as { flags: string } | undefined)
    .filter((option) => option !== undefined)
    .map((option) => option.flags);
  return { name: name.split(' ')[0], description, flags };
});

/** Text as a reader sees it, whatever commander's wrapping of long lines. */
const oneLine = (text: string) => text.replace(/\s+/g, ' ');

describe('admin CLI: help answers on a machine with no database yet', () => {
  // A database never created and a Redis nothing listens on: help must touch neither.
  const NO_DATABASE = { DATABASE_URL: databaseUrl(`onceline_never_created_${randomBytes(4).toString('hex')}`), REDIS_URL: 'redis://127.0.0.1:1' };

  it('reads every command\'s declarations (the list the help is checked against)', () => {
    expect(DECLARED.length).toBeGreaterThanOrEqual(20);
    expect(DECLARED.find((c) => c.name === 'numbers:order')?.flags).toEqual(expect.arrayContaining(['--account <id>', '--json']));
  });

  it('onceline --help lists every command with its description: exit 0, no log line, nothing on stderr', async () => {
    const run = await runNode(['bin/onceline.js', '--help'], NO_DATABASE);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Usage: onceline \[options\] \[command\]/);
    for (const { name, description } of DECLARED) {
      expect(oneLine(run.stdout)).toContain(` ${name} `);
      expect(oneLine(run.stdout)).toContain(oneLine(description));
    }
  }, SLOW);

  it('onceline <command> --help shows its description and options the same way (the built program)', async () => {
    const run = await runNode(['dist/cli.js', 'numbers:order', '--help'], NO_DATABASE);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Usage: onceline numbers:order \[options\]/);
    const order = DECLARED.find((c) => c.name === 'numbers:order')!;
    for (const text of [order.description, ...order.flags]) expect(oneLine(run.stdout)).toContain(oneLine(text));
  }, SLOW);

  it('every command\'s --help (and `help <command>`) names each of its options, exit 0, with nothing reachable', async () => {
    for (const { name, description, flags } of DECLARED) {
      for (const args of [[name, '--help'], ['help', name]]) {
        const run = await runCliHere(args, NO_DATABASE);
        expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
        for (const text of [description, ...flags]) expect(oneLine(run.stdout)).toContain(oneLine(text));
      }
    }
  }, SLOW);
});

describe('admin CLI: every command with --json prints exactly one JSON document on stdout', () => {
  let db: TestDatabase;
  const cli = (args: string[], env: Record<string, string> = {}) =>
    runCliHere([...args, '--json'], { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, ...env });

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('migrate creates a missing database, applies every migration, and is idempotent; a command before it says to migrate', async () => {
    const name = `onceline_t_cli_${randomBytes(4).toString('hex')}`;
    const url = databaseUrl(name);
    try {
      const early = await cli(['plans:list'], { DATABASE_URL: url });
      expectFailure(early, 'command_failed', /cannot reach PostgreSQL .*does not exist/);
      const admin = new pg.Client({ connectionString: TEST_PG_BASE });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const unmigrated = await cli(['plans:list'], { DATABASE_URL: url });
      expectFailure(unmigrated, 'command_failed', /has no Onceline tables yet: run `onceline migrate`/);

      const first = await cli(['migrate'], { DATABASE_URL: url });
      expect(first.code).toBe(0);
      const applied = oneDocument(first);
      expect(applied.applied).toContain('0001_foundation.sql');
      expect(applied.already_applied).toEqual([]);

      const again = await cli(['migrate'], { DATABASE_URL: url });
      expect(again.code).toBe(0);
      expect(oneDocument(again)).toEqual({ applied: [], already_applied: applied.applied });
    } finally {
      const admin = new pg.Client({ connectionString: TEST_PG_BASE });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  }, SLOW);

  it('accounts:create, api-keys:create and api-keys:revoke print their results; keys are stored hashed', async () => {
    const created = await cli(['accounts:create', '--name', 'Acme "CLI" Ltd']);
    expect(created.code).toBe(0);
    const account = oneDocument(created);
    expect(account.account).toEqual({ id: expect.stringMatching(/^acct_/), name: 'Acme "CLI" Ltd' });
    expect(account.api_key).toMatch(/^olk_[A-Za-z0-9_-]{43}$/);
    expect(account.api_key_id).toEqual(expect.any(String));

    const second = await cli(['api-keys:create', '--account', account.account.id]);
    expect(second.code).toBe(0);
    const key = oneDocument(second);
    expect(key).toEqual({ api_key: expect.stringMatching(/^olk_/), id: expect.any(String) });
    expect(key.api_key).not.toBe(account.api_key);
    expect(await db.count(`SELECT count(*) FROM api_keys WHERE account_id = $1`, [account.account.id])).toBe(2);
    // Only the SHA-256 is kept: the key itself appears nowhere in the row.
    const { rows } = await db.pool.query(`SELECT row_to_json(api_keys)::text AS row FROM api_keys WHERE id = $1`, [key.id]);
    expect(rows[0].row).not.toContain(key.api_key);

    const revoked = await cli(['api-keys:revoke', key.id]);
    expect(revoked.code).toBe(0);
    expect(oneDocument(revoked)).toEqual({ id: key.id, revoked: true });
    const twice = await cli(['api-keys:revoke', key.id]);
    expect(twice.code).toBe(0);
    expect(oneDocument(twice)).toEqual({ id: key.id, revoked: false });
  }, SLOW);

  it('outbox:status prints the pending count and the age of the oldest pending job', async () => {
    await db.pool.query(
      `INSERT INTO outbox_jobs (job_id, queue, name, data, run_at) VALUES
         ('cli-status-1', 'system', 'probe', '{}', now() - interval '30 seconds'),
         ('cli-status-2', 'system', 'probe', '{}', now() + interval '1 hour')`,
    );
    const run = await cli(['outbox:status']);
    expect(run.code).toBe(0);
    const status = oneDocument(run);
    expect(status.pending).toBe(2);
    expect(status.oldest_pending_seconds).toBeGreaterThanOrEqual(30);
    expect(Object.keys(status).sort()).toEqual(['oldest_pending_seconds', 'pending']);
  }, SLOW);

  it('retention:status lists each partitioned table\'s partitions (bounds, bytes, row estimates) and what the next run makes and drops', async () => {
    const run = await cli(['retention:status']);
    expect(run.code).toBe(0);
    const { data } = oneDocument(run);
    expect(data.map((t: { table: string }) => t.table)).toEqual(
      expect.arrayContaining([
        'carrier_events', 'outbox_jobs', 'usage_records', 'calls', 'call_legs', 'call_timeline', 'call_transcript_fragments', 'call_command_sends',
        'messages', 'message_status_history', 'outbound_events', 'webhook_deliveries', 'webhook_delivery_attempts',
      ]),
    );
    expect(data.find((t: { table: string }) => t.table === 'usage_records')).toMatchObject({ retention_hours: 9600, period_seconds: 2_592_000 });
    expect(data.find((t: { table: string }) => t.table === 'calls')).toMatchObject({ retention_hours: 2160, period_seconds: 604_800 });
    expect(data.find((t: { table: string }) => t.table === 'messages')).toMatchObject({ retention_hours: 720, next_run: { drop: [], held: [] } });
    const events = data.find((t: { table: string }) => t.table === 'carrier_events');
    expect(events).toMatchObject({ retention_hours: 96, period_seconds: 86400, next_run: { drop: [], held: [] } });
    expect(data.find((t: { table: string }) => t.table === 'outbox_jobs')).toMatchObject({ retention_hours: 72 });
    expect(events.partitions.length).toBeGreaterThanOrEqual(3);
    expect(events.partitions[0]).toEqual({ name: expect.stringMatching(/^carrier_events_p\d{8}t\d{6}$/), from: expect.any(String), to: expect.any(String), bytes: expect.any(Number), rows_estimate: null, detach_pending: false });
    expect(Array.isArray(events.next_run.create)).toBe(true);
  }, SLOW);

  it('errors are one JSON document too, with a non-zero exit', async () => {
    const cases: Array<[string[], Record<string, string>, string, RegExp]> = [
      [['accounts:create'], {}, 'command_failed', /--name/],
      [['api-keys:create', '--account', 'acct_doesnotexist'], {}, 'not_found', /acct_doesnotexist/],
      [['api-keys:revoke', 'key_doesnotexist'], {}, 'not_found', /key_doesnotexist/],
      [['api-keys:revoke'], {}, 'command_failed', /argument/],
      [['outbox:status', '--bogus'], {}, 'command_failed', /--bogus/],
      [['no-such-command'], {}, 'command_failed', /no-such-command/],
      [['outbox:status'], { PORT: 'abc' }, 'command_failed', /PORT/],
    ];
    const runs = await mapLimit(cases, 2, ([args, env]) => cli(args, env));
    runs.forEach((run, i) => expectFailure(run, cases[i][2], cases[i][3]));
  }, SLOW);

  it('a database that does not answer is reported as one JSON document', async () => {
    const nobody = databaseUrl('onceline', `postgres://postgres@127.0.0.1:${await freePort()}/postgres`);
    const [status, migrate] = await Promise.all([cli(['outbox:status'], { DATABASE_URL: nobody }), cli(['migrate'], { DATABASE_URL: nobody })]);
    expectFailure(status, 'command_failed', /ECONNREFUSED/);
    expectFailure(migrate, 'command_failed', /ECONNREFUSED/);
  }, SLOW);

  it('a database it cannot reach: the message names the URL tried (password hidden) and where it came from, environment or .env', async () => {
    const port = await freePort();
    const fromEnv = await cli(['outbox:status'], { DATABASE_URL: `postgres://bob:s3cret-pw@127.0.0.1:${port}/onceline` });
    expectFailure(fromEnv, 'command_failed', new RegExp(`cannot reach PostgreSQL at postgres://bob:\\*\\*\\*@127\\.0\\.0\\.1:${port}/onceline \\(DATABASE_URL from the environment\\)`));
    expect(fromEnv.stdout + fromEnv.stderr).not.toContain('s3cret-pw');

    // The same file the app, the demo and the scripts read (ONCELINE_ENV_FILE names it; by default .env in the package root).
    const dir = mkdtempSync(join(tmpdir(), 'onceline-env-'));
    const file = join(dir, 'test.env');
    writeFileSync(file, `# a second install\nDATABASE_URL=postgres://carol:hunter2@127.0.0.1:${port}/second\nQUEUE_PREFIX=second\n`);
    const fromFile = await runCliHere(['outbox:status', '--json'], { ONCELINE_ENV_FILE: file, REDIS_URL: TEST_REDIS_URL });
    expectFailure(fromFile, 'command_failed', new RegExp(`postgres://carol:\\*\\*\\*@127\\.0\\.0\\.1:${port}/second \\(DATABASE_URL from \\.env \\(${file.replace(/[.]/g, '\\.')}\\)\\)`));
    expect(fromFile.stdout + fromFile.stderr).not.toContain('hunter2');
    // The environment wins over the file.
    const both = await runCliHere(['outbox:status', '--json'], { ONCELINE_ENV_FILE: file, DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL });
    expect(both.code).toBe(0);
    rmSync(dir, { recursive: true });
  }, SLOW);
});
