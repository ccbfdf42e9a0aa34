import { Injectable, Logger } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

export type HousekeepingTask = (tx: Tx) => Promise<number>;

/**
 * Periodic clean-ups (retention of keys, old rows) that modules register; the relay role runs
 * them with its own maintenance, each in its own transaction, so no extra scheduler is needed.
 */
@Injectable()
export class Housekeeping {
  private readonly logger = new Logger(Housekeeping.name);
  private readonly tasks = new Map<string, HousekeepingTask>();

  constructor(private readonly uow: UnitOfWork) {}

  register(name: string, task: HousekeepingTask): void {
    if (this.tasks.has(name)) throw new Error(`housekeeping task ${name} registered twice`);
    this.tasks.set(name, task);
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
