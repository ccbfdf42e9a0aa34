import { createHash } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { queryRows } from '../../platform/database/tx.js';

/** One recorded export (a row of usage_exports), as `usage:export --json` prints it. */
export interface UsageExport {
  id: number;
  period_from: string;
  period_to: string;
  row_count: number;
  sha256: string;
  format: 'jsonl';
  file: string;
  exported_at: string;
}

/** Rows fetched from the export's cursor at a time. */
const FETCH_ROWS = 5000;

/** A timestamptz as the export writes it: UTC, microseconds (the ledger's own precision, so a row's period is never ambiguous). */
const UTC_MICROS = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * One ledger row as a line of the export (JSON Lines): every column, integers exact (bigint as a
 * JSON number; all well inside 2^53), created_at to the microsecond, the cause as stored.
 */
const LINE_SQL = `json_build_object('id', id, 'account_id', account_id, 'kind', kind, 'resource_id', resource_id, 'quantity', quantity,
                                    'unit_price_micros', unit_price_micros, 'amount_micros', amount_micros,
                                    'created_at', to_char(created_at AT TIME ZONE 'UTC', ${UTC_MICROS}), 'cause', cause)::text AS line`;

/**
 * `onceline usage:export`: the ledger rows of a period, every account, to a file, and the record
 * of it (usage_exports: period, row count, SHA-256 of the file) without which retention never drops
 * a usage partition (UsageRetention). The rows are read through one cursor in one REPEATABLE READ
 * snapshot, ordered by (created_at, id), so the count recorded is the count of lines written; the
 * file is written beside its name and renamed into place before the export is recorded, so a
 * recorded export always has its whole file. A row recorded in the period after this snapshot (a
 * transaction that began before the period ended) makes the ledger's count differ from the
 * export's: retention then holds the partition until the period is exported again.
 */
@Injectable()
export class UsageExports {
  constructor(private readonly dataSource: DataSource) {}

  /** Exports [period.from, period.to) to `to` (a path; recorded absolute), once the period has ended. */
  async export(period: { from: Date; to: Date }, to: string, now = new Date()): Promise<UsageExport> {
    const file = resolve(to);
    if (!(period.from < period.to)) throw new Error('the period must end after it begins (--from before --to)');
    if (period.to > now) throw new Error(`the period has not ended yet (it ends ${period.to.toISOString()}): export it once it has`);
    const partial = `${file}.partial`;
    const hash = createHash('sha256');
    let rowCount = 0;
    const out = await open(partial, 'w');
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.startTransaction('REPEATABLE READ');
      await runner.query(
        `DECLARE usage_export NO SCROLL CURSOR FOR
           SELECT ${LINE_SQL} FROM usage_records WHERE created_at >= $1 AND created_at < $2 ORDER BY created_at, id`,
        [period.from, period.to],
      );
      for (;;) {
        const rows: { line: string }[] = await runner.query(`FETCH ${FETCH_ROWS} FROM usage_export`);
        if (rows.length === 0) break;
        const chunk = rows.map((r) => `${r.line}\n`).join('');
        hash.update(chunk);
        await out.write(chunk);
        rowCount += rows.length;
      }
      await runner.commitTransaction();
      await out.sync();
    } catch (err) {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await out.close();
      await rm(partial, { force: true });
      throw err;
    } finally {
      await runner.release();
    }
    await out.close();
    await rename(partial, file);
    const [row] = await queryRows<Record<string, string | number>>(this.dataSource.manager,
      `INSERT INTO usage_exports (period_from, period_to, row_count, sha256, format, file) VALUES ($1, $2, $3, $4, 'jsonl', $5)
       RETURNING id, to_char(period_from AT TIME ZONE 'UTC', ${UTC_MICROS}) AS period_from, to_char(period_to AT TIME ZONE 'UTC', ${UTC_MICROS}) AS period_to,
                 row_count::int, sha256, format, file, to_char(exported_at AT TIME ZONE 'UTC', ${UTC_MICROS}) AS exported_at`,
      [period.from, period.to, rowCount, hash.digest('hex'), file],
    );
    return { ...row, id: Number(row.id), row_count: Number(row.row_count) } as UsageExport;
  }
}
