import { Injectable } from '@nestjs/common';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { CallJoinTimeoutJob, CallTranscriptJob } from './calls.jobs.js';
import { HandlesJob, type JobContext, type JobHandler } from '../../platform/outbox/job-handler.js';
import { CallFlow } from './call-flow.js';
import { CallTransitions } from './call-transitions.js';

/**
 * DIAL_JOIN_TIMEOUT_SECONDS after a leg won the answer: if it was never bridged, it is written
 * off (the retry table, docs/exactly-once.md): hung up, the call rings again, and the plan takes its turn from that leg.
 */
@Injectable()
@HandlesJob(CallJoinTimeoutJob)
export class CallJoinTimeoutHandler implements JobHandler<typeof CallJoinTimeoutJob> {
  constructor(
    private readonly transitions: CallTransitions,
    private readonly flow: CallFlow,
  ) {}

  async handle({ callId, legId }: PayloadOf<typeof CallJoinTimeoutJob>, { tx }: JobContext): Promise<void> {
    if (!(await this.transitions.lockById(tx!, callId))) return;
    // Guarded on the leg still being the winner with no bridge: a bridge or a hangup that got there first wins.
    const call = await this.transitions.writeOffUnjoinedAnswer(tx!, callId, legId);
    if (!call) return;
    const leg = (await this.transitions.legs(tx!, callId)).find((l) => l.id === legId)!;
    await this.transitions.endLeg(tx!, { id: legId, call_id: callId }, new Date().toISOString(), 'join_timeout');
    await this.flow.hangUpLeg(tx!, call, leg);
    await this.flow.advanceAfterLeg(tx!, call, leg, 'join_timeout');
  }
}

/** After an answered, transcribed call ended: its transcript from the fragments, `call.transcribed` once. */
@Injectable()
@HandlesJob(CallTranscriptJob)
export class CallTranscriptHandler implements JobHandler<typeof CallTranscriptJob> {
  constructor(
    private readonly transitions: CallTransitions,
    private readonly flow: CallFlow,
  ) {}

  async handle({ callId }: PayloadOf<typeof CallTranscriptJob>, { tx }: JobContext): Promise<void> {
    const call = await this.transitions.completeTranscript(tx!, callId);
    if (call) await this.flow.announce(tx!, call, 'call.transcribed');
  }
}
