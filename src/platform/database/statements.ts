import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';

/** One name per statement text, so a connection prepares each text once. */
const names = new Map<string, string>();

export function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `ol_${createHash('sha256').update(text).digest('hex').slice(0, 40)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * The hot path's autocommit statements as named prepared statements. PostgreSQL parses, analyses
 * and plans an unnamed statement on every execution, which for a statement of ten CTEs costs more
 * than running it; prepared once per pooled connection, later runs only bind and execute
 * (`node bench/e2e.mjs` prints the pgbench reference in both modes). Their texts are few and fixed
 * (values are always parameters), so each connection holds a bounded set.
 * DATABASE_PREPARED_STATEMENTS=false sends them unnamed, for a pooler that cannot keep prepared
 * statements across transactions (PgBouncer in transaction mode before 1.21, docs/scaling.md).
 */
@Injectable()
export class Statements {
  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  async query<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
    if (!this.config.DATABASE_PREPARED_STATEMENTS) return this.dataSource.query(text, params);
    // TypeORM's pool for the primary: a named query needs pg's own config object.
    const pool = (this.dataSource.driver as unknown as { master: Pool }).master;
    const { rows } = await pool.query({ name: statementName(text), text, values: params });
    return rows as T[];
  }
}
