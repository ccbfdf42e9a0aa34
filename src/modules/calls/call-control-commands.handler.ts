import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallCommandResult, CallControl } from '../../carriers/call-control.js';
import { TelnyxCallControl } from '../../carriers/telnyx/telnyx-call-control.js';
import type { Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PayloadOf } from '../../platform/outbox/job-definition.js';
import { CallControlCommandsJob } from './calls.jobs.js';
import { HandlesJob, type JobContext, type JobHandler } from '../../platform/outbox/job-handler.js';
import { CallCommandCompletions } from './call-command-completions.js';
import { CallCommandSends, firstSendOf, type CommandSend } from './call-command-sends.js';
import type { QueuedCommand } from './call-control-commands.js';
import { CallFlow } from './call-flow.js';
import { CallTransitions } from './call-transitions.js';
import { hurry } from '../../platform/database/connection-budget.js';

type Payload = PayloadOf<typeof CallControlCommandsJob>;

/** No resend closer than this to the end of the carrier's command_id window (the request still has to arrive). */
const WINDOW_MARGIN_MS = 5_000;
/**
 * Sends of one command_id at the most, across runs and restarts: the first, one resend after a
 * 408/5xx, 429 waits, and the repeats of a command no answer came back for (about 15 inside the
 * window, SILENT_RESEND_MAX_MS apart at most).
 */
const MAX_SENDS = 20;
/** A command no answer came back for is asked again at once, then 250 ms, 500 ms, … later, at most this far apart. */
const SILENT_RESEND_BASE_MS = 250;
const SILENT_RESEND_MAX_MS = 4_000;


/**
 * Sends a batch of call-control commands in order, outside any transaction, each only while its
 * call still wants it (CallCommandSends.claim). The carrier retry table (docs/exactly-once.md):
 * any 4xx is an answer, so a refused dial is that target failing and the plan moves on;
 * a command the carrier answered 408 or 5xx is sent once more with the same command id; a 429 is
 * waited out; a command no answer came back for (our CALL_COMMAND_TIMEOUT_MS passed, or the
 * connection dropped) may have been carried out, so it is asked again under the same command id,
 * at once and then with backoff, until the carrier answers (a repeat gets the first answer: a
 * dial names the leg it created) or its call no longer wants it: a slow carrier is never taken
 * for a failed dial, which would ring the next target beside a leg that exists. Nothing is resent
 * once the carrier's command_id window (Telnyx: 60 s) is closing, since a late resend could
 * create a second physical leg.
 */
@Injectable()
@HandlesJob(CallControlCommandsJob)
export class CallControlCommandsHandler implements JobHandler<typeof CallControlCommandsJob> {
  private readonly logger = new Logger(CallControlCommandsHandler.name);
  private readonly control: CallControl;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly transitions: CallTransitions,
    private readonly flow: CallFlow,
    private readonly sends: CallCommandSends,
    private readonly completions: CallCommandCompletions,
    telnyx: TelnyxCallControl,
  ) {
    this.control = telnyx;
  }

  /**
   * Gives the job its outcome itself (`completed`), once every command is sent and decided: in
   * the statement that keeps the last dial's leg when the job ends with one the carrier answered,
   * else in one of its own; either is shared with the other jobs ending meanwhile
   * (CallCommandCompletions). Without a job id (a run outside the outbox) nothing is completed.
   */
  async handle({ callId, commands }: Payload, { jobId, signal, prefetched }: Partial<JobContext> = {}): Promise<'completed' | void> {
    const queued = commands as QueuedCommand[];
    const firstSend = firstSendOf(prefetched);
    let claimed: Promise<CommandSend | undefined> | undefined = firstSend && Promise.resolve(firstSend);
    let completed = false;
    for (const [i, command] of queued.entries()) {
      // The next command's claim (its guard, read by its own statement) goes beside this one's
      // send, not a round trip after its answer: a join's bridge follows the caller's answer with
      // no claim between. Not after a dial, whose outcome (afterDial) bears on what follows. A
      // bridge so claimed while the carrier is slow to answer the answer may reach a leg that hung
      // up meanwhile: the carrier refuses it (a 4xx, an answer), as any command in flight then.
      const next = queued[i + 1];
      const nextClaim = next && command.action !== 'dial' ? this.sends.claim(callId, next) : undefined;
      // Awaited by the next turn; a stop that ends this one first must not leave its failure unhandled.
      nextClaim?.catch(() => undefined);
      const result = await this.send(callId, command, signal, claimed);
      claimed = nextClaim;
      if (result === 'not_wanted') continue;
      // The carrier has it: what the result records (a dial's leg) goes before the leg's own
      // events, which come next (a new call's first dial waits for its send as `next`).
      hurry('now');
      if (command.action === 'dial' && command.legId) completed = await this.afterDial(command.leg.callId, command.legId, result, i === queued.length - 1 ? jobId : undefined);
      else if (result.outcome !== 'done') this.logger.warn(`${command.action} ${command.commandId} ${result.outcome}: ${describe(result)}`);
    }
    if (!jobId) return;
    if (!completed) await this.completions.end({ jobId });
    return 'completed';
  }

  /** The carrier never answered (attempts spent): a dial in the batch counts as not answered, so the plan moves on. */
  async onFinalFailure({ commands }: Payload, error: string, tx: Tx): Promise<void> {
    for (const command of commands as QueuedCommand[]) {
      if (command.action === 'dial' && command.legId) await this.dialFailed(tx, command.leg.callId, command.legId, `dial not answered: ${error}`.slice(0, 500));
    }
  }

  /**
   * One command, sent and resent by the retry table; `not_wanted` when its call no longer wants it.
   * A process that stops (`signal`) sends nothing more and throws: the job's retry asks again under
   * the same command id, inside the same window (its sends are counted in Postgres).
   */
  private async send(callId: string | null, command: QueuedCommand, signal: AbortSignal | undefined, claimed?: Promise<CommandSend | undefined>): Promise<CallCommandResult | 'not_wanted'> {
    const unanswered = { answered: 0, silent: 0 };
    // `claimed`: the first send's claim, already made (recorded by the statement that decided the
    // command, CallCommandSends.recordFirstSendsIn, or beside the previous command's send).
    let firstClaim = claimed;
    for (;;) {
      signal?.throwIfAborted();
      const send = await (firstClaim ?? this.sends.claim(callId, command));
      firstClaim = undefined;
      if (!send) return 'not_wanted';
      if (!this.insideWindow(send, 0)) return { outcome: 'unanswered', detail: `not resent: ${send.sends - 1} sends already, the carrier's command_id window is closing` };
      const result = await this.control.send(command);
      if (result.outcome !== 'unanswered') return result;
      const delayMs = resendDelayMs(result, unanswered);
      if (delayMs === undefined || !this.insideWindow(send, delayMs)) return result;
      // An abort ends the wait with the stop's own reason (what the job's row records), not a bare AbortError.
      if (delayMs > 0) await sleep(delayMs, undefined, { signal }).catch((err: unknown) => {
        signal?.throwIfAborted();
        throw err;
      });
    }
  }

  /** Whether a send `delayMs` from now still reaches the carrier inside its command_id window. */
  private insideWindow(send: CommandSend, delayMs: number): boolean {
    if (send.sends === 1) return true;
    return send.sends <= MAX_SENDS && Date.now() + delayMs < send.firstSentAt.getTime() + this.control.commandIdWindowMs - WINDOW_MARGIN_MS;
  }

  /**
   * A dial's outcome. Done: the leg the carrier created is named on our row; if the row already
   * names another physical leg, or the leg or its call ended while the dial was in flight, the
   * one just created is hung up. Refused or not answered: the leg is written off unless the
   * carrier has told us about it, and the plan moves on. `completing`: the job whose last command
   * this dial is, completed in the statement that keeps its leg; returns whether it was.
   */
  private async afterDial(callId: string, legId: string, result: CallCommandResult, completing?: string): Promise<boolean> {
    if (result.outcome === 'done') {
      const controlId = result.controlId;
      if (!controlId) return false;
      // The usual answer (the live leg takes its physical leg, nothing follows) costs no transaction.
      if (await this.completions.end({ jobId: completing, keep: { legId, callId, controlId } })) return completing !== undefined;
      await this.uow.run(async (tx) => {
        const control = await this.transitions.claimLegControl(tx, { id: legId, call_id: callId }, controlId);
        if (control.ours && !control.over) return;
        await this.flow.hangUpPhysicalLeg(tx, callId, legId, controlId, control.ours);
      });
      return false;
    }
    const cause = result.outcome === 'refused' ? `dial refused: ${result.status} ${result.code}` : `dial not answered: ${result.detail}`;
    await this.uow.run((tx) => this.dialFailed(tx, callId, legId, cause.slice(0, 500)));
    return false;
  }

  /** A dial that created no leg we know of: that leg is over, and the plan takes its turn from it (a placed call fails). */
  private async dialFailed(tx: Tx, callId: string, legId: string, cause: string): Promise<void> {
    const call = await this.transitions.lockById(tx, callId);
    if (!call) return;
    // Guarded on the carrier never having named the leg: one it reported rings on and ends by its own hangup.
    const leg = await this.transitions.writeOffUnreportedLeg(tx, { id: legId, call_id: callId }, new Date().toISOString(), cause);
    if (!leg) return;
    if (!call.ring_plan) {
      await this.flow.endCall(tx, call, new Date().toISOString(), 'dial_failed', leg, { failed: true });
      return;
    }
    await this.flow.advanceAfterLeg(tx, call, leg, 'dial_refused');
  }
}

/**
 * How long to wait before sending a command the carrier did not answer once more, or undefined:
 * not again. `unanswered` counts the unanswered sends so far, by kind.
 */
function resendDelayMs(result: CallCommandResult & { outcome: 'unanswered' }, unanswered: { answered: number; silent: number }): number | undefined {
  if (result.retryAfterMs !== undefined) return result.retryAfterMs;
  if (result.silent) return unanswered.silent++ === 0 ? 0 : Math.min(SILENT_RESEND_MAX_MS, SILENT_RESEND_BASE_MS * 2 ** (unanswered.silent - 2));
  return unanswered.answered++ === 0 ? 0 : undefined;
}

function describe(result: CallCommandResult): string {
  if (result.outcome === 'refused') return `${result.status} ${result.code} ${result.detail}`;
  return result.outcome === 'unanswered' ? result.detail : 'done';
}
