import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource, QueryFailedError } from 'typeorm';
import { isUniqueViolation } from '../../../src/platform/database/pg-errors.js';
import { prepareStatementsOf, statementName } from '../../../src/platform/database/statements.js';
import { exec, type Tx } from '../../../src/platform/database/tx.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

/**
 * exec runs each statement as a named prepared statement on the connection that runs it (a
 * transaction's own, or a pooled one), so PostgreSQL parses and plans a text once per connection;
 * with DATABASE_PREPARED_STATEMENTS=false (a data source not marked) every statement goes unnamed.
 */
describe('exec: named prepared statements', () => {
  let db: TestDatabase;
  let prepared: DataSource;
  let unnamed: DataSource;
  const dataSource = (url: string) => new DataSource({ type: 'postgres', url, entities: [], extra: { max: 2 } });

  beforeAll(async () => {
    db = await createTestDatabase();
    prepared = await dataSource(db.url).initialize();
    prepareStatementsOf(prepared);
    unnamed = await dataSource(db.url).initialize();
  });
  afterAll(async () => {
    await prepared.destroy();
    await unnamed.destroy();
    await db.drop();
  });

  const TEXT = 'SELECT $1::int + 1 AS n';
  /** The statements this transaction's own connection has prepared, as pg_prepared_statements lists them. */
  const preparedOnThisConnection = async (tx: Tx) =>
    (await exec<{ name: string; statement: string }>(tx, 'SELECT name, statement FROM pg_prepared_statements ORDER BY name')).rows;

  it('in a transaction, a statement runs prepared under its name, and runs again bound to it', async () => {
    const listed = await prepared.transaction(async (manager) => {
      const tx = manager as Tx;
      expect((await exec<{ n: number }>(tx, TEXT, [41])).rows).toEqual([{ n: 42 }]);
      expect((await exec<{ n: number }>(tx, TEXT, [1])).rows).toEqual([{ n: 2 }]);
      return preparedOnThisConnection(tx);
    });
    expect(listed).toContainEqual({ name: statementName(TEXT), statement: TEXT });
  });

  it('outside a transaction too, with the affected count of a write', async () => {
    await exec(prepared.manager, 'CREATE TABLE IF NOT EXISTS prepared_probe (id int PRIMARY KEY)');
    const inserted = await exec(prepared.manager, 'INSERT INTO prepared_probe (id) SELECT g FROM generate_series(1, $1::int) g ON CONFLICT DO NOTHING', [3]);
    expect(inserted.affected).toBe(3);
    const again = await exec(prepared.manager, 'INSERT INTO prepared_probe (id) SELECT g FROM generate_series(1, $1::int) g ON CONFLICT DO NOTHING', [4]);
    expect(again.affected).toBe(1);
  });

  it('a named statement that fails fails as TypeORM does: a QueryFailedError carrying the SQLSTATE', async () => {
    await exec(prepared.manager, 'CREATE TABLE IF NOT EXISTS prepared_unique (id int PRIMARY KEY)');
    await exec(prepared.manager, 'INSERT INTO prepared_unique (id) VALUES ($1)', [1]);
    const err = await exec(prepared.manager, 'INSERT INTO prepared_unique (id) VALUES ($1)', [1]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueryFailedError);
    expect(isUniqueViolation(err)).toBe(true);
  });

  it('a text without parameters keeps the simple protocol: unnamed, and it may hold several statements', async () => {
    const listed = await prepared.transaction(async (manager) => {
      const tx = manager as Tx;
      await exec(tx, 'CREATE TEMP TABLE several_probe (n int); INSERT INTO several_probe VALUES (1), (2)');
      expect((await exec<{ n: number }>(tx, 'SELECT count(*)::int AS n FROM several_probe')).rows).toEqual([{ n: 2 }]);
      return preparedOnThisConnection(tx);
    });
    expect(listed.filter((row) => row.statement.includes('several_probe'))).toEqual([]);
  });

  it('a data source not marked to prepare (DATABASE_PREPARED_STATEMENTS=false) runs every statement unnamed', async () => {
    const listed = await unnamed.transaction(async (manager) => {
      const tx = manager as Tx;
      expect((await exec<{ n: number }>(tx, TEXT, [41])).rows).toEqual([{ n: 42 }]);
      return preparedOnThisConnection(tx);
    });
    expect(listed).toEqual([]);
  });
});
