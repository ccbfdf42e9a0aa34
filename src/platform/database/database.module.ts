import { Global, Module, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { UnitOfWork } from './unit-of-work.js';
import { Statements } from './statements.js';

/** The one TypeORM connection pool every module shares. Schema comes from migrations only. */
@Global()
@Module({
  providers: [
    {
      provide: DataSource,
      inject: [AppConfig],
      useFactory: async (config: AppConfig) => {
        const dataSource = new DataSource({
          type: 'postgres',
          url: config.DATABASE_URL,
          synchronize: false,
          migrationsRun: false,
          entities: [],
          extra: { max: 20, connectionTimeoutMillis: 5000 },
        });
        return dataSource.initialize();
      },
    },
    UnitOfWork,
    Statements,
  ],
  exports: [DataSource, UnitOfWork, Statements],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
