import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Tx } from '../../platform/database/tx.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import { CallControlCommandsJob } from './calls.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import { CallCommandSends, type QueuedCommand } from './call-command-sends.js';
import type { CallRow, LegRow } from './call-view.js';

/** A command as queued (declared beside the claims that read its leg: CallCommandSends). */
export type { QueuedCommand } from './call-command-sends.js';

/**
 * Builds call-control commands with ids that are stable per intent (the same decision replayed
 * gives the same ids, so the carrier does it once) and queues them as one outbox job, written in
 * the transaction of the decision: a decision that rolls back sends nothing.
 */
@Injectable()
export class CallControlCommands {
  constructor(
    private readonly outbox: OutboxService,
    private readonly sends: CallCommandSends,
  ) {}

  /** Sends `commands` in order once this transaction commits; `batch` names the intent (the job id). */
  async queue(tx: Tx, callId: string | null, batch: string, commands: QueuedCommand[]): Promise<void> {
    if (commands.length === 0) return;
    await this.outbox.enqueue(tx, { job: CallControlCommandsJob, data: { callId, commands }, jobId: `cmd-${batch}` });
  }

  /**
   * queue for many decisions of one statement: one job per row of CTE `source` (call_id, batch,
   * commands jsonb), written by `stmt` with the decisions; a batch already queued is one job, as
   * in queue. Returns the CTE of the new jobs.
   */
  queueManyIn(stmt: CteStatement, source: string): string {
    const queued = this.outbox.jobsFromCte(stmt, 'call_commands_queued', source, CallControlCommandsJob, {
      id: `'cmd-' || batch`,
      data: `jsonb_build_object('callId', call_id, 'commands', commands)`,
      // Sent here after commit from the commands as written, as queue's are.
      payload: true,
    });
    this.sends.recordFirstSendsIn(stmt, queued);
    return queued;
  }


  dial(call: CallRow, leg: LegRow, timeoutSecs: number): QueuedCommand {
    return {
      action: 'dial',
      commandId: `${leg.id}-dial`,
      legId: leg.id,
      // inbound: the caller's number, so the target sees who calls; outbound: our number
      from: call.from_number,
      to: leg.to_number,
      timeoutSecs,
      ...(call.caller_control_id && { linkTo: call.caller_control_id }),
      leg: { callId: call.id, target: leg.target_index, attempt: leg.attempt },
    };
  }

  /** Answers the caller: for the winning leg `legId`, or (no leg) for the voicemail. */
  answerCaller(call: CallRow, legId?: string): QueuedCommand {
    return { action: 'answer', commandId: `${call.id}-answer`, controlId: call.caller_control_id!, ...(legId && { legId }) };
  }

  bridge(call: CallRow, leg: LegRow & { control_id: string }): QueuedCommand {
    return { action: 'bridge', commandId: `${call.id}-bridge-${leg.id}`, controlId: call.caller_control_id!, otherControlId: leg.control_id, legId: leg.id };
  }

  /**
   * answerCaller (for a leg), bridge and startTranscription in SQL, the same objects from SQL text
   * naming the call's id, the caller's leg, the winning leg's id and its physical leg: a set
   * statement's join (CallFlow.joinCommandsSql).
   */
  joinSql(callId: string, callerControlId: string, legId: string, legControlId: string): { answer: string; bridge: string; transcription: string } {
    return {
      answer: `jsonb_build_object('action', 'answer', 'commandId', ${callId} || '-answer', 'controlId', ${callerControlId}, 'legId', ${legId})`,
      bridge: `jsonb_build_object('action', 'bridge', 'commandId', ${callId} || '-bridge-' || ${legId}, 'controlId', ${callerControlId}, 'otherControlId', ${legControlId}, 'legId', ${legId})`,
      transcription: `jsonb_build_object('action', 'transcription_start', 'commandId', ${callId} || '-transcribe', 'controlId', ${callerControlId}, 'legId', ${legId})`,
    };
  }

  hangupLeg(leg: Pick<LegRow, 'id'> & { control_id: string }): QueuedCommand {
    return { action: 'hangup', commandId: `${leg.id}-hangup`, controlId: leg.control_id };
  }

  /** hangupLeg in SQL, the same object from a leg's `id` and `controlId` (SQL text): a set statement's commands (CallEndsInSets). */
  hangupLegSql(id: string, controlId: string): string {
    return `jsonb_build_object('action', 'hangup', 'commandId', ${id} || '-hangup', 'controlId', ${controlId})`;
  }

  /** A second physical leg of one try (or a stray one): hung up by the id the carrier named it with. */
  hangupStray(legId: string, controlId: string): QueuedCommand {
    return { action: 'hangup', commandId: `${legId}-hangup-${createHash('sha256').update(controlId).digest('hex').slice(0, 12)}`, controlId };
  }

  /** The caller's leg (or a call nobody recorded: `key` names it then). */
  hangupCaller(controlId: string, key: string): QueuedCommand {
    return { action: 'hangup', commandId: `${key}-hangup-caller`, controlId };
  }

  /** hangupCaller in SQL, the same object from `controlId` and `key` (SQL text). */
  hangupCallerSql(controlId: string, key: string): string {
    return `jsonb_build_object('action', 'hangup', 'commandId', ${key} || '-hangup-caller', 'controlId', ${controlId})`;
  }

  recordVoicemail(call: CallRow): QueuedCommand {
    return { action: 'record_start', commandId: `${call.id}-record`, controlId: call.caller_control_id! };
  }

  startTranscription(call: CallRow, legId: string): QueuedCommand {
    return { action: 'transcription_start', commandId: `${call.id}-transcribe`, controlId: call.caller_control_id!, legId };
  }
}
