import { Injectable, Logger } from '@nestjs/common';
import type { CallControl } from '../../carriers/call-control.js';
import { TelnyxCallControl } from '../../carriers/telnyx/telnyx-call-control.js';
import type { Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { JobName, type JobPayloads } from '../../platform/outbox/job-catalogue.js';
import { HandlesJob, type JobHandler } from '../../platform/outbox/job-handler.js';
import type { QueuedCommand } from './call-commands.js';
import { CallFlow } from './call-flow.js';
import { CallTransitions } from './call-transitions.js';

type Payload = JobPayloads[JobName.CallCommands];

/**
 * Sends a batch of call-control commands in order, outside any transaction. The retry table
 * (seed 001): a 5xx or transport error throws, and BullMQ runs the batch again with the same
 * command ids (the carrier does each once); a 4xx is the carrier's answer: a refused dial is
 * that target failing, and the ring plan moves on; any other refusal is logged and left.
 */
@Injectable()
@HandlesJob(JobName.CallCommands)
export class CallCommandsHandler implements JobHandler<JobName.CallCommands> {
  private readonly logger = new Logger(CallCommandsHandler.name);
  private readonly control: CallControl;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly transitions: CallTransitions,
    private readonly flow: CallFlow,
    telnyx: TelnyxCallControl,
  ) {
    this.control = telnyx;
  }

  async handle({ commands }: Payload): Promise<void> {
    for (const command of commands as QueuedCommand[]) {
      const result = await this.control.send(command);
      if (command.action !== 'dial' || !command.legId) {
        if (result.outcome === 'refused') this.logger.warn(`${command.action} ${command.commandId} refused: ${result.status} ${result.code} ${result.detail}`);
        continue;
      }
      const legId = command.legId;
      if (result.outcome === 'done') {
        if (result.controlId) await this.uow.run((tx) => this.transitions.stampLegControlId(tx, legId, result.controlId!));
      } else {
        await this.uow.run((tx) => this.dialFailed(tx, command.leg.callId, legId, `dial refused: ${result.status} ${result.code}`));
      }
    }
  }

  /** The carrier never answered (attempts spent): a dial in the batch counts as failed, so the plan moves on. */
  async onFinalFailure({ commands }: Payload, error: string, tx: Tx): Promise<void> {
    for (const command of commands as QueuedCommand[]) {
      if (command.action === 'dial' && command.legId) await this.dialFailed(tx, command.leg.callId, command.legId, `dial not answered: ${error}`.slice(0, 500));
    }
  }

  /** A dial that created no leg at the carrier: that leg is over, and the plan takes its turn from it. */
  private async dialFailed(tx: Tx, callId: string, legId: string, cause: string): Promise<void> {
    const call = await this.transitions.lockById(tx, callId);
    const leg = call && (await this.transitions.legs(tx, callId)).find((l) => l.id === legId);
    if (!call || !leg) return;
    // ended_at IS NULL on the leg: a leg that did come up (its events were processed) is not failed by this.
    if (!(await this.transitions.endLeg(tx, legId, new Date().toISOString(), cause, 'failed'))) return;
    if (!call.ring_plan) {
      await this.flow.endCall(tx, call, new Date().toISOString(), 'dial_failed', leg);
      return;
    }
    await this.flow.advanceAfterLeg(tx, call, leg, 'dial_refused');
  }
}
