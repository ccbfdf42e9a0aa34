import { Global, Module } from '@nestjs/common';
import { InvariantMetrics } from './invariant-metrics.js';
import { Invariants } from './invariants.js';
import { VerifyService } from './verify.service.js';

/**
 * The invariant registry every module registers its checks with (global, like the config and
 * the database), the read-only pass over them (`onceline verify`) and its /metrics gauge.
 */
@Global()
@Module({ providers: [Invariants, VerifyService, InvariantMetrics], exports: [Invariants, VerifyService] })
export class VerifyModule {}
