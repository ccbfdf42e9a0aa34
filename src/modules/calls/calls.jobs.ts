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
export const CallControlCommandsJob = defineJob<{ callId: string | null; commands: object[] }>({ name: 'call-commands', queue, lane: 'realtime', urgency: 'now', mode: 'external', attempts: 8, backoffMs: 250, runsAfterCommit: true });

/** A leg that answered but was not bridged within DIAL_JOIN_TIMEOUT_SECONDS is written off. */
export const CallJoinTimeoutJob = defineJob<{ callId: string; legId: string }>({ name: 'call-join-timeout', queue, lane: 'realtime', urgency: 'soon', mode: 'transactional', attempts: 10, backoffMs: 1000 });

/** Assembles an ended call's transcript from its fragments; `call.transcribed` once. */
export const CallTranscriptJob = defineJob<{ callId: string }>({ name: 'call-transcript', queue, lane: 'bulk', mode: 'transactional', attempts: 10, backoffMs: 1000 });
