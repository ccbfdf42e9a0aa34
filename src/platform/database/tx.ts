import { QueryFailedError, type EntityManager } from 'typeorm';
import { preparedName } from './statements.js';

declare const txBrand: unique symbol;

/**
 * An EntityManager that is inside an open transaction. Only UnitOfWork makes one, so a
 * function that takes a Tx cannot be called outside a transaction (enqueue, emit, usage).
 */
export type Tx = EntityManager & { readonly [txBrand]: true };

export interface QueryResult<T> {
  rows: T[];
  /** Rows inserted, updated or deleted by the statement (0 for ON CONFLICT DO NOTHING on a duplicate). */
  affected: number;
}

type PgClient = { query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows?: unknown[]; rowCount?: number | null }> };

/**
 * Runs one statement and returns its rows and its affected count (TypeORM's structured result),
 * as a named prepared statement on the runner's connection where the data source prepares them
 * (statements.ts: parsed and planned once per connection, not on every run; PostgreSQL's CPU per
 * call event fell by a third, the git history of docs/benchmarks.md).
 */
export async function exec<T = Record<string, unknown>>(
  manager: EntityManager,
  sql: string,
  params: unknown[] = [],
): Promise<QueryResult<T>> {
  const runner = manager.queryRunner ?? manager.connection.createQueryRunner();
  try {
    // A text without parameters keeps the simple protocol, as before: it may hold several
    // statements (a migration's file), and it is rarely a hot one.
    const name = params.length > 0 ? preparedName(manager.connection, sql) : undefined;
    if (name) {
      // TypeORM's query takes no statement name: pg's own config object on the runner's client.
      const client = (await runner.connect()) as PgClient;
      try {
        const raw = await client.query({ name, text: sql, values: params });
        return { rows: (raw.rows ?? []) as T[], affected: raw.rowCount ?? 0 };
      } catch (err) {
        // As TypeORM's own query fails: the driver's error (its SQLSTATE `code`) on a QueryFailedError.
        throw new QueryFailedError(sql, params, err as Error);
      }
    }
    // EntityManager.query drops the affected count; the query runner's structured result keeps it.
    const result = (await runner.query(sql, params, true)) as { records: T[]; affected?: number };
    return { rows: result.records ?? [], affected: result.affected ?? 0 };
  } finally {
    if (runner !== manager.queryRunner) await runner.release();
  }
}

/**
 * The rows of one statement: how a read runs (the customer API's queries, listings), in or out of
 * a transaction (`dataSource.manager` outside one). exec when the affected count matters.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as dataSource.query: the caller names the row type
export async function queryRows<T = any>(manager: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await exec<T>(manager, sql, params)).rows;
}

export function assertInTransaction(manager: EntityManager): asserts manager is Tx {
  if (!manager.queryRunner?.isTransactionActive) {
    throw new Error('this write must run inside a transaction: pass the Tx from UnitOfWork.run');
  }
}
