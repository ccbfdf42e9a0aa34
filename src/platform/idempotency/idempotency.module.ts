import { Module, type OnModuleInit } from '@nestjs/common';
import { Housekeeping } from '../outbox/housekeeping.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { IdempotencyKeys } from './idempotency-keys.js';

/** Idempotency-Key support for any create endpoint; keys older than 24 h are cleaned by the relay role. */
@Module({ imports: [OutboxModule], providers: [IdempotencyKeys], exports: [IdempotencyKeys] })
export class IdempotencyModule implements OnModuleInit {
  constructor(
    private readonly housekeeping: Housekeeping,
    private readonly keys: IdempotencyKeys,
  ) {}

  onModuleInit(): void {
    this.housekeeping.register('idempotency-keys', (tx) => this.keys.cleanExpired(tx));
  }
}
