import { randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { CallMedia } from './call-media.js';
import type { Chaos } from '../chaos.js';
import type { Answer, SandboxEngine } from '../sandbox-engine.js';
import { bump, type CallStats } from '../sandbox-stats.js';
import { BehaviourBook, planDialedLeg } from './call-behaviour.js';
import { farEndHangup, isDecline, ourHangup, TARGET_HANGUPS, type Hangup, type LegSide } from './call-hangups.js';
import { callResource, isAlive, isAnswered, type CallLeg, type CallSession } from './call-leg.js';
import { callLogLine, type CallLogLine } from './call-log.js';
import { CallWebhookQueue } from './call-webhook-queue.js';
import { LostAnswerBook } from './lost-answers.js';
import { callAnswered, callBridged, callHangup, callInitiated, callWebhook } from './telnyx-call-events.js';
import { telnyxErrors } from './telnyx-sandbox.js';

/** Telnyx's longest call leg (its default time_limit_secs), in call time: then `time_limit`. */
export const TIME_LIMIT_MS = 14_400_000;
/** Whatever the scale, no timer of an emulated call waits longer than this real time. */
const MAX_REAL_WAIT_MS = 600_000;
/** Telnyx ignores a repeated command_id for this long (real time, not call time); later it carries the command out again. */
export const COMMAND_ID_WINDOW_MS = 60_000;
/** Command ids and calls remembered (oldest forgotten first): plenty for any demo or test run. */
const MAX_REMEMBERED_COMMANDS = 100_000;
const MAX_SESSIONS = 50_000;

/** What Telnyx answers a command (the same shape as a send's answer). */
export type CommandAnswer = Answer;

export interface CommandResult {
  answer: CommandAnswer;
  /** Resolves once the webhooks this command caused are delivered (for `early_receipt`). */
  delivered: Promise<void>;
}

/** A dial the route validated (Telnyx field names in camelCase). */
export interface DialRequest {
  connectionId: string;
  to: string;
  from: string;
  timeoutSecs: number;
  linkTo?: string;
  clientState: string | null;
  commandId?: string;
  webhookUrl: string;
}

export interface InboundRequest {
  from: string;
  to: string;
  callerHangupAfterMs: number | null;
  talkMs: number | null;
  transcript: string[] | null;
}

export interface CallControlSettings {
  timeScale: number;
  /** connection_id of inbound calls. */
  connectionId: string;
  /** Where call events go unless a dial names its webhook_url. */
  webhookUrl: string;
}

const side = (leg: CallLeg): LegSide => ({ direction: leg.direction, answered: isAnswered(leg) });
const newCallControlId = () => `v3:${randomBytes(27).toString('base64url')}`;

/**
 * The emulated Telnyx Call Control: legs, sessions, command ids, target behaviours and the events
 * each change of a leg sends back. Everything runs synchronously inside one command or timer, so
 * a command id or a leg's state is checked and changed with no await in between.
 */
export class TelnyxCallControl {
  readonly behaviours = new BehaviourBook();
  /** Commands carried out whose answers are then lost (`lose_command_answers`). */
  readonly lostAnswers = new LostAnswerBook();
  timeScale: number;
  commandIdWindowMs = COMMAND_ID_WINDOW_MS;
  private readonly legs = new Map<string, CallLeg>();
  private readonly sessions = new Map<string, CallSession>();
  /** Each command id's first answer and when it was carried out. */
  private readonly commands = new Map<string, { answer: CommandAnswer; at: number }>();
  /** The client_state of every dial that made a leg: the app's intent (call, target, attempt). */
  private readonly dialIntents = new Set<string>();
  /** Recordings and transcriptions of the calls' legs. */
  readonly media = new CallMedia(this);
  /** Deliveries of the command running now. */
  private pushed?: Promise<void>[];

  constructor(
    private readonly engine: SandboxEngine,
    private readonly privateKey: KeyObject,
    private readonly settings: CallControlSettings,
  ) {
    this.timeScale = settings.timeScale;
  }

  get stats(): CallStats {
    return this.engine.stats.calls;
  }

  find(callControlId: string): CallLeg | undefined {
    return this.legs.get(callControlId);
  }

  sessionLegs(callSessionId: string): CallLeg[] | undefined {
    return this.sessions.get(callSessionId)?.legs;
  }

  liveLegs(): CallLeg[] {
    return [...this.legs.values()].filter(isAlive);
  }

  /**
   * Runs a command once per command id within Telnyx's window, as Telnyx ignores a repeated one: a
   * repeat gets the first answer and changes nothing. Past the window the command runs again
   * (`again` tells `run`). 5xx answers are not remembered (the command did not run).
   */
  once(key: string | undefined, onReplay: () => void, run: (again: boolean) => CommandAnswer): CommandResult {
    const seen = key === undefined ? undefined : this.commands.get(key);
    if (seen && Date.now() - seen.at < this.commandIdWindowMs) {
      onReplay();
      return { answer: seen.answer, delivered: Promise.resolve() };
    }
    const pushed: Promise<void>[] = [];
    this.pushed = pushed;
    let answer: CommandAnswer;
    try {
      answer = run(seen !== undefined);
    } finally {
      this.pushed = undefined;
    }
    if (key !== undefined && answer.status < 500) {
      this.commands.delete(key);
      this.commands.set(key, { answer, at: Date.now() });
      if (this.commands.size > MAX_REMEMBERED_COMMANDS) this.commands.delete(this.commands.keys().next().value!);
    }
    return { answer, delivered: Promise.all(pushed).then(() => undefined) };
  }

  dial(req: DialRequest, chaos: Chaos): CommandResult {
    const key = req.commandId === undefined ? undefined : `dial:${req.commandId}`;
    return this.once(key, () => this.stats.dials.replayed++, (again) => {
      const reaction = this.behaviours.take(req.to);
      if (reaction.kind === 'dial_error') {
        bump(this.stats.dials.errors, String(reaction.status));
        const body = reaction.status >= 500
          ? telnyxErrors('10007', 'Unexpected error', 'Sandbox behaviour dial_error.')
          : telnyxErrors('10015', 'Bad Request', 'The sandbox refused this dial (behaviour dial_error).', '/to');
        return { status: reaction.status, body };
      }
      const linked = req.linkTo === undefined ? undefined : this.legs.get(req.linkTo);
      const session = (linked && this.sessions.get(linked.callSessionId)) ?? this.newSession(chaos);
      this.countDial(session, linked, req, again);
      const leg = this.newLeg(session, {
        direction: 'outgoing', from: req.from, to: req.to, connectionId: req.connectionId, clientState: req.clientState,
        webhookUrl: req.webhookUrl, linkTo: req.linkTo, transcript: reaction.kind === 'answer' ? reaction.transcript : null, talkMs: null,
      });
      this.emit(leg, 'call.initiated', callInitiated(leg));
      const plan = planDialedLeg(reaction, req.timeoutSecs * 1000);
      this.schedule(leg, plan.at, () => (plan.then === 'answer' ? this.markAnswered(leg, plan.talkMs, plan.hangupFirst) : this.endLeg(leg, plan.hangup)));
      return { status: 200, body: { data: callResource(leg) } };
    });
  }

  /** A handset calls one of the app's numbers: the caller's leg, parked, client_state null. */
  inbound(req: InboundRequest, chaos: Chaos): { leg: CallLeg; delivered: Promise<void> } {
    let leg!: CallLeg;
    const { delivered } = this.once(undefined, () => undefined, () => {
      this.stats.inbound++;
      const session = this.newSession(chaos);
      leg = this.newLeg(session, {
        direction: 'incoming', from: req.from, to: req.to, connectionId: this.settings.connectionId, clientState: null,
        webhookUrl: this.settings.webhookUrl, transcript: req.transcript, talkMs: req.talkMs,
      });
      this.emit(leg, 'call.initiated', callInitiated(leg));
      if (req.callerHangupAfterMs !== null) this.schedule(leg, req.callerHangupAfterMs, () => this.endLeg(leg, farEndHangup(side(leg))));
      return { status: 200, body: null };
    });
    return { leg, delivered };
  }

  /** The far end of a leg hangs up now (POST /sandbox/calls/{id}/hangup). */
  farEndHangsUp(leg: CallLeg): CommandResult {
    return this.once(undefined, () => undefined, () => {
      if (!isAlive(leg)) return callHasEnded();
      this.endLeg(leg, farEndHangup(side(leg)));
      return { status: 200, body: { data: { result: 'ok' } } };
    });
  }

  /** Sends a leg's event; a leg holding its events until its hangup (`answer_then_drop`) sends them after it. */
  emit(leg: CallLeg, eventType: string, payload: Record<string, unknown>): void {
    const session = this.sessions.get(leg.callSessionId);
    if (!session) return;
    bump(this.stats.events, eventType);
    const webhook = callWebhook(eventType, leg, payload, this.privateKey);
    if (leg.heldUntilHangup && eventType !== 'call.hangup') {
      leg.heldUntilHangup.push(webhook);
      return;
    }
    const held = eventType === 'call.hangup' ? leg.heldUntilHangup?.splice(0) ?? [] : [];
    const delivered = session.queue.push(webhook);
    this.pushed?.push(delivered);
    // The held events go out once the hangup has been delivered (all its copies), so even under
    // `reorder` the app hears of the hangup first: that is the behaviour being played.
    if (held.length > 0) {
      const after = delivered.then(() => Promise.all(held.map((each) => session.queue.push(each)))).then(() => undefined);
      this.pushed?.push(after);
    }
  }

  /**
   * Runs `fn` after `callMs` of call time unless the leg has ended by then. Every time of a call
   * (behaviours, the app's timeouts, the time limit) is call time: real time is call time ×
   * time_scale, so one knob runs whole calls faster or slower and keeps their proportions.
   */
  schedule(leg: CallLeg, callMs: number, fn: () => void): void {
    const cancel = this.engine.timers.after(Math.round(callMs * this.timeScale), () => {
      leg.timers.delete(cancel);
      if (isAlive(leg)) fn();
    }, MAX_REAL_WAIT_MS);
    leg.timers.add(cancel);
  }

  /**
   * The leg is answered: `call.answered`; its far end hangs up `talkMs` later (null: never on its
   * own). `hangupFirst`: its events from here on are held and delivered after its `call.hangup`.
   */
  markAnswered(leg: CallLeg, talkMs: number | null, hangupFirst = false): void {
    if (hangupFirst) leg.heldUntilHangup = [];
    leg.state = 'answered';
    leg.answeredAt = new Date();
    this.emit(leg, 'call.answered', callAnswered(leg));
    if (talkMs !== null) this.schedule(leg, talkMs, () => this.endLeg(leg, farEndHangup(side(leg))));
  }

  bridge(leg: CallLeg, other: CallLeg): void {
    leg.bridgedWith = other.callControlId;
    other.bridgedWith = leg.callControlId;
    leg.state = other.state = 'bridged';
    this.emit(leg, 'call.bridged', callBridged(leg));
    this.emit(other, 'call.bridged', callBridged(other));
  }

  /**
   * Ends a leg once: `call.hangup`, then its recording if one runs. Its bridged partner is hung up
   * with it (Telnyx ends both sides of a bridge); a dialed leg still ringing is not, even when
   * its caller left: that is the app's job.
   */
  endLeg(leg: CallLeg, hangup: Hangup): void {
    if (!isAlive(leg)) return;
    for (const cancel of leg.timers) cancel();
    leg.timers.clear();
    leg.state = 'hangup';
    leg.endedAt = new Date();
    leg.hangup = hangup;
    this.stats.live_legs--;
    bump(this.stats.hangups, hangup.cause);
    this.emit(leg, 'call.hangup', callHangup(leg, hangup));
    this.media.legEnded(leg);
    const session = this.sessions.get(leg.callSessionId);
    if (session?.legs[0] === leg && leg.direction === 'incoming') bump(this.stats.legs_per_call, String(session.legs.length - 1));
    const linked = leg.linkTo === undefined ? undefined : this.legs.get(leg.linkTo);
    if (hangup.cause === 'timeout' && linked && !isAlive(linked)) this.stats.dials.left_ringing++;
    const partner = leg.bridgedWith === undefined ? undefined : this.legs.get(leg.bridgedWith);
    if (partner) this.endLeg(partner, ourHangup(side(partner)));
  }

  /** The call log: every call whose first leg ended (at or after `since`), in the order they ended. */
  log(since?: Date): CallLogLine[] {
    const lines: CallLogLine[] = [];
    for (const { legs: [first] } of this.sessions.values()) {
      if (!first?.endedAt || !first.hangup || (since && first.endedAt < since)) continue;
      lines.push(callLogLine({ ...first, endedAt: first.endedAt, hangup: first.hangup }));
    }
    return lines.sort((a, b) => a.end_time.localeCompare(b.end_time));
  }

  /** Counts the dial and what a careful app would not have done (the demo's "wrong dials"). */
  private countDial(session: CallSession, linked: CallLeg | undefined, { to, clientState }: DialRequest, again: boolean): void {
    const dials = this.stats.dials;
    dials.accepted++;
    // A second physical leg for one intent: its command id came back past Telnyx's window, or a new one carried the same client_state.
    if (again || (clientState !== null && this.dialIntents.has(clientState))) dials.duplicate_legs++;
    this.rememberIntent(clientState);
    bump(dials.to, to);
    if (linked && !isAlive(linked)) dials.after_caller_hangup++;
    const dialed = session.legs.filter((l) => l.direction === 'outgoing' && l.linkTo !== undefined);
    if (dialed.some((l) => l.state === 'bridging')) dials.while_another_rings++;
    if (dialed.some((l) => l.to === to && isDecline(l.hangup))) dials.after_decline++;
  }

  private rememberIntent(clientState: string | null): void {
    if (clientState === null) return;
    this.dialIntents.add(clientState);
    if (this.dialIntents.size > MAX_REMEMBERED_COMMANDS) this.dialIntents.delete(this.dialIntents.values().next().value!);
  }

  private newSession(chaos: Chaos): CallSession {
    const session: CallSession = { id: randomUUID(), legs: [], chaos, queue: new CallWebhookQueue(this.engine, chaos) };
    this.sessions.set(session.id, session);
    this.forgetOldSession();
    return session;
  }

  private newLeg(session: CallSession, fields: Pick<CallLeg, 'direction' | 'from' | 'to' | 'connectionId' | 'clientState' | 'webhookUrl' | 'transcript' | 'talkMs'> & { linkTo?: string }): CallLeg {
    const leg: CallLeg = {
      ...fields,
      callControlId: newCallControlId(),
      callLegId: randomUUID(),
      callSessionId: session.id,
      state: fields.direction === 'incoming' ? 'parked' : 'bridging',
      startedAt: new Date(),
      transcribing: false,
      timers: new Set(),
    };
    session.legs.push(leg);
    this.legs.set(leg.callControlId, leg);
    this.stats.live_legs++;
    this.schedule(leg, TIME_LIMIT_MS, () => this.endLeg(leg, TARGET_HANGUPS.time_limit));
    return leg;
  }

  /** Past MAX_SESSIONS, the oldest call is forgotten once all its legs have ended. */
  private forgetOldSession(): void {
    if (this.sessions.size <= MAX_SESSIONS) return;
    const [id, oldest] = this.sessions.entries().next().value!;
    if (oldest.legs.some(isAlive)) return;
    this.sessions.delete(id);
    for (const leg of oldest.legs) this.legs.delete(leg.callControlId);
  }
}

/** Telnyx's answer to a command on a leg that has hung up. */
export function callHasEnded(): CommandAnswer {
  return { status: 422, body: telnyxErrors('90018', 'Call has already ended', 'This call is no longer active and can\'t receive commands.') };
}
