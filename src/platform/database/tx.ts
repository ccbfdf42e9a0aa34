import type { EntityManager } from 'typeorm';

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

/** Runs one statement and returns its rows and its affected count (TypeORM's structured result). */
export async function exec<T = Record<string, unknown>>(
  manager: EntityManager,
  sql: string,
  params: unknown[] = [],
): Promise<QueryResult<T>> {
  // EntityManager.query drops the affected count; the query runner's structured result keeps it.
  const runner = manager.queryRunner ?? manager.connection.createQueryRunner();
  try {
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
