import { Module } from '@nestjs/common';

/**
 * Sequential ring: the ring plan a number's voice settings hold (validated here), and the policy
 * that walks it (ring-plan.ts: which target next, the one redial a SIP 408/503/504 earns, declined
 * targets never dialed again, the fallback). Pure decisions: the Calls module applies each one by
 * compare-and-set on the call row, where the plan's cursor lives beside the call's status so one
 * WHERE clause guards both.
 */
@Module({})
export class SequentialRingModule {}
