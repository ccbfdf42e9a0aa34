import { Module } from '@nestjs/common';
import { IdempotencyKeys } from './idempotency-keys.js';

/** Idempotency-Key support for any create endpoint. */
@Module({ providers: [IdempotencyKeys], exports: [IdempotencyKeys] })
export class IdempotencyModule {}
