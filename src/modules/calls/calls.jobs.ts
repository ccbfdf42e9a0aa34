import type { Urgency } from '../../platform/database/connection-budget.js';
import { defineJob } from '../../platform/outbox/job-definition.js';

/** Call-control commands and call timers have their own queue: dead air waits behind nothing else. */
const queue = 'calls';

/**
 * Sends call-control commands (dial, answer, bridge, hangup, ...) in order (external: at least
 * once, each with its command id). `commands`: QueuedCommand list (call-control-commands.ts).
 * Carrier 5xx and transport errors repeat the same commands with the same command ids (~1 min in all).
 * Sent by the process whose transaction decided them, right after its commit (the outbox row is the backstop).
 * The stored name stays 'call-commands' (rows in Postgres and Redis carry it).
 */
export const CallControlCommandsJob = defineJob<{ callId: string | null; commands: object[] }>({
  name: 'call-commands', queue, lane: 'realtime', urgency: 'now', urgencyOf: commandsUrgency, mode: 'external', attempts: 8, backoffMs: 250, runsAfterCommit: true,
});

/**
 * A person on the line first (Urgency): the join of a leg that answered (answer, bridge,
 * transcription: someone hears silence until it is out) `now`; a new call's first dial (the first
 * try of the plan's first target: the call is decided, only the send is left) `next`, before
 * other new calls' first events (`new`); any other (a hand-off's dial, hangups) `soon`.
 */
function commandsUrgency({ commands }: { commands: { action?: string; leg?: { target?: number; attempt?: number } }[] }): Urgency {
  if (commands.some((command) => command.action === 'answer' || command.action === 'bridge' || command.action === 'transcription_start')) return 'now';
  return commands.some((command) => command.action === 'dial' && command.leg?.target === 0 && command.leg.attempt === 1) ? 'next' : 'soon';
}

/** A leg that answered but was not bridged within DIAL_JOIN_TIMEOUT_SECONDS is written off. */
export const CallJoinTimeoutJob = defineJob<{ callId: string; legId: string }>({ name: 'call-join-timeout', queue, lane: 'realtime', urgency: 'soon', mode: 'transactional', attempts: 10, backoffMs: 1000 });

/** Assembles an ended call's transcript from its fragments; `call.transcribed` once. */
export const CallTranscriptJob = defineJob<{ callId: string }>({ name: 'call-transcript', queue, lane: 'bulk', mode: 'transactional', attempts: 10, backoffMs: 1000 });
