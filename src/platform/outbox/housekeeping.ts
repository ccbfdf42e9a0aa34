import { Injectable, Logger } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { UniqueRegistry } from '../registry.js';

export type HousekeepingTask = (tx: Tx) => Promise<number>;

/**
 * Periodic clean-ups (retention of keys, old rows) that modules register; the relay role runs
 * them with its own maintenance, each in its own transaction, so no extra scheduler is needed.
 */
@Injectable()
export class Housekeeping {
  private readonly logger = new Logger(Housekeeping.name);
  private readonly tasks = new UniqueRegistry<string, HousekeepingTask>('housekeeping task');

  constructor(private readonly uow: UnitOfWork) {}

  register(name: string, task: HousekeepingTask): void {
    this.tasks.register(name, task);
  }

  /** Runs every task; one failing does not stop the others. Returns rows affected per task. */
  async runAll(): Promise<Record<string, number>> {
    const done: Record<string, number> = {};
    for (const [name, task] of this.tasks) {
      try {
        done[name] = await this.uow.run(task);
      } catch (err) {
        this.logger.warn(`housekeeping ${name} failed: ${(err as Error).message}`);
      }
    }
    return done;
  }
}
