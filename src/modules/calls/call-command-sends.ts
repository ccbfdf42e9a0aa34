import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { exec } from '../../platform/database/tx.js';
import { createdAtOfId } from '../../platform/retention/id-partition-key.js';
import type { QueuedCommand } from './call-control-commands.js';

/** A command we may (still) send: when its command_id first went out, and how often it has. */
export interface CommandSend {
  firstSentAt: Date;
  sends: number;
}

/**
 * When a command is still wanted, read in the statement that records its send (so a call that
 * ended, or a leg that lost, is never dialed, answered or bridged by a command queued before):
 *  - a dial: its leg is not over and its call still rings;
 *  - the join of a winner (answer, bridge, transcription naming `legId`): that leg is still the
 *    call's live winner, and the call has not ended;
 *  - the voicemail's answer and recording: the call has not ended;
 *  - a hangup: always.
 */
// The leg ($3) by its call's id ($2) too: call_legs is partitioned by its call's id time (migration 0055).
const LEG_OF_CALL = `l.call_id = $2 AND ${createdAtOfId('$2', 'onceline_id_time(l.call_id)')}`;
const WANTED = {
  dial: `EXISTS (SELECT FROM call_legs l JOIN calls c ON c.id = l.call_id WHERE l.id = $3 AND ${LEG_OF_CALL} AND l.ended_at IS NULL AND c.ended_at IS NULL AND c.status = 'ringing')`,
  join: `EXISTS (SELECT FROM calls c JOIN call_legs l ON l.id = c.answered_leg WHERE c.id = $2 AND l.id = $3 AND ${LEG_OF_CALL} AND l.ended_at IS NULL AND c.ended_at IS NULL)`,
  call: `EXISTS (SELECT FROM calls c WHERE c.id = $2 AND c.ended_at IS NULL)`,
  always: 'true',
} as const;

function wantedWhen(command: QueuedCommand): keyof typeof WANTED {
  if (command.action === 'hangup') return 'always';
  if (command.action === 'dial') return 'dial';
  return command.legId ? 'join' : 'call';
}

/** The record of every call-control command sent (call_command_sends), one row per command_id. */
@Injectable()
export class CallCommandSends {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Records one more send of `command`, or returns undefined (and records nothing) when the call
   * no longer wants it. One statement: the guard is its SELECT's WHERE, and the row it inserts or
   * bumps says when the command_id first went out, which bounds every resend by the carrier's
   * command_id window however often the job runs or its process restarts.
   */
  async claim(callId: string | null, command: QueuedCommand): Promise<CommandSend | undefined> {
    const when = callId ? wantedWhen(command) : 'always';
    const params = when === 'dial' || when === 'join' ? [command.commandId, callId, command.legId] : [command.commandId, callId];
    const { rows } = await exec<{ first_sent_at: Date; sends: number }>(
      this.dataSource.manager,
      // call_command_send: the row bumped or made under the command id's lock (migration 0055:
      // ON CONFLICT (command_id) cannot be named on the partitioned table); run only for the one
      // row `wanted` yields (it is passed in, so the call cannot be hoisted above the guard).
      `SELECT s.first_sent_at, s.sends FROM (SELECT $1::text AS command_id WHERE ${WANTED[when]}) wanted
         CROSS JOIN LATERAL call_command_send(wanted.command_id, $2::text) s`,
      params,
    );
    return rows[0] && { firstSentAt: rows[0].first_sent_at, sends: rows[0].sends };
  }
}
