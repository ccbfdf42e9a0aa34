import { Global, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { UnitOfWork } from './unit-of-work.js';
import { prepareStatementsOf, Statements } from './statements.js';
import { ConnectionBudget } from './connection-budget.js';

/**
 * The one TypeORM connection pool every module shares, with each lane's connection budget in
 * front of it (ConnectionBudget). Schema comes from migrations only.
 */
@Global()
@Module({
  providers: [
    {
      provide: ConnectionBudget,
      inject: [AppConfig],
      useFactory: (config: AppConfig) => new ConnectionBudget({ realtime: config.DATABASE_REALTIME_CONNECTIONS, bulk: config.DATABASE_BULK_CONNECTIONS }),
    },
    {
      provide: DataSource,
      inject: [AppConfig, ConnectionBudget],
      useFactory: async (config: AppConfig, budget: ConnectionBudget) => {
        const dataSource = new DataSource({
          type: 'postgres',
          url: config.DATABASE_URL,
          synchronize: false,
          migrationsRun: false,
          entities: [],
          extra: {
            max: config.DATABASE_POOL_SIZE,
            connectionTimeoutMillis: 5000,
            // A startup option, so every connection has it before its first statement (DATABASE_PLAN_CACHE_MODE).
            ...(config.DATABASE_PLAN_CACHE_MODE !== 'auto' ? { options: `-c plan_cache_mode=${config.DATABASE_PLAN_CACHE_MODE}` } : {}),
          },
        });
        await dataSource.initialize();
        if (config.DATABASE_PREPARED_STATEMENTS) prepareStatementsOf(dataSource);
        budget.install((dataSource.driver as unknown as { master: Pool }).master);
        return dataSource;
      },
    },
    UnitOfWork,
    Statements,
  ],
  exports: [DataSource, UnitOfWork, Statements, ConnectionBudget],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
