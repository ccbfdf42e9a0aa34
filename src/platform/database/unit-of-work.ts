import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Tx } from './tx.js';

type CommitHooks = { afterCommit?: (() => void)[]; afterRollback?: (() => void)[] };

/**
 * Registers a hint to run once the transaction has committed (never if it rolls back): e.g. a
 * relay wake-up, which inside the transaction would serialize every producer's commit.
 */
export function afterCommit(tx: Tx, hook: () => void): void {
  const data = tx.queryRunner!.data as CommitHooks;
  (data.afterCommit ??= []).push(hook);
}

/** Registers a hook to run if the transaction rolls back (never once it has committed): gives back what it held. */
export function afterRollback(tx: Tx, hook: () => void): void {
  const data = tx.queryRunner!.data as CommitHooks;
  (data.afterRollback ??= []).push(hook);
}

/** Runs a function in one transaction; every write given the Tx commits or rolls back together. */
@Injectable()
export class UnitOfWork {
  private readonly logger = new Logger(UnitOfWork.name);

  constructor(private readonly dataSource: DataSource) {}

  async run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    let hooks: CommitHooks = {};
    let result: T;
    try {
      result = await this.dataSource.transaction(async (manager) => {
        hooks = manager.queryRunner!.data as CommitHooks;
        hooks.afterCommit = [];
        hooks.afterRollback = [];
        return work(manager as Tx);
      });
    } catch (err) {
      this.runHooks(hooks.afterRollback, 'after-rollback');
      throw err;
    }
    this.runHooks(hooks.afterCommit, 'after-commit');
    return result;
  }

  private runHooks(hooks: (() => void)[] | undefined, what: string): void {
    for (const hook of hooks ?? []) {
      try {
        hook();
      } catch (err) {
        this.logger.warn(`${what} hook failed: ${(err as Error).message}`);
      }
    }
  }
}
