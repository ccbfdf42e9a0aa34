import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Tx } from './tx.js';

type CommitHooks = { afterCommit?: (() => void)[] };

/**
 * Registers a hint to run once the transaction has committed (never if it rolls back): e.g. a
 * relay wake-up, which inside the transaction would serialize every producer's commit.
 */
export function afterCommit(tx: Tx, hook: () => void): void {
  const data = tx.queryRunner!.data as CommitHooks;
  (data.afterCommit ??= []).push(hook);
}

/** Runs a function in one transaction; every write given the Tx commits or rolls back together. */
@Injectable()
export class UnitOfWork {
  private readonly logger = new Logger(UnitOfWork.name);

  constructor(private readonly dataSource: DataSource) {}

  async run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    let hooks: (() => void)[] = [];
    const result = await this.dataSource.transaction(async (manager) => {
      const data = manager.queryRunner!.data as CommitHooks;
      data.afterCommit = [];
      const value = await work(manager as Tx);
      hooks = data.afterCommit;
      return value;
    });
    for (const hook of hooks) {
      try {
        hook();
      } catch (err) {
        this.logger.warn(`after-commit hook failed: ${(err as Error).message}`);
      }
    }
    return result;
  }
}
