import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Tx } from './tx.js';

/** Runs a function in one transaction; every write given the Tx commits or rolls back together. */
@Injectable()
export class UnitOfWork {
  constructor(private readonly dataSource: DataSource) {}

  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.dataSource.transaction((manager) => work(manager as Tx));
  }
}
