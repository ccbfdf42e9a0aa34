import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';

/** One name per statement text, so a connection prepares each text once. */
const names = new Map<string, string>();

/**
 * The most statement texts a process prepares. The app's texts are fixed (values are always
 * parameters; src/ has about 200 call sites that run SQL, some assembling a few variants); a text
 * first seen past this many runs unnamed, so a pooled connection never holds more than this many
 * prepared statements (each keeps its plan in the server's memory).
 */
export const MAX_PREPARED_TEXTS = 400;

export function statementName(text: string): string | undefined {
  let name = names.get(text);
  if (!name && names.size < MAX_PREPARED_TEXTS) {
    name = `ol_${createHash('sha256').update(text).digest('hex').slice(0, 40)}`;
    names.set(text, name);
  }
  return name;
}

/** The data sources whose statements run as named prepared statements (DATABASE_PREPARED_STATEMENTS). */
const preparing = new WeakSet<DataSource>();

export function prepareStatementsOf(dataSource: DataSource): void {
  preparing.add(dataSource);
}

/** The name `text` runs under on `dataSource`'s connections, or undefined when it runs unnamed. */
export function preparedName(dataSource: DataSource, text: string): string | undefined {
  return preparing.has(dataSource) ? statementName(text) : undefined;
}

/**
 * The hot path's autocommit statements, each on whichever pooled connection is free (no query
 * runner). Like every statement exec runs, a named prepared statement: PostgreSQL parses, analyses
 * and plans an unnamed statement on every execution, which for a statement of ten CTEs costs more
 * than running it; prepared once per pooled connection, later runs only bind and execute
 * (`node bench/e2e.mjs` prints the pgbench reference in both modes).
 * DATABASE_PREPARED_STATEMENTS=false sends them unnamed, for a pooler that cannot keep prepared
 * statements across transactions (PgBouncer in transaction mode before 1.21, docs/scaling.md).
 */
@Injectable()
export class Statements {
  constructor(private readonly dataSource: DataSource) {}

  async query<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
    const name = preparedName(this.dataSource, text);
    if (!name) return this.dataSource.query(text, params);
    // TypeORM's pool for the primary: a named query needs pg's own config object.
    const pool = (this.dataSource.driver as unknown as { master: Pool }).master;
    const { rows } = await pool.query({ name, text, values: params });
    return rows as T[];
  }
}
