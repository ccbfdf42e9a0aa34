import { randomBytes, randomUUID } from 'node:crypto';
import { twilioSignature } from '../../carriers/twilio/twilio-signature.js';
import { SandboxClosed } from '../bounded-timers.js';
import type { Chaos } from '../chaos.js';
import type { SandboxEngine } from '../sandbox-engine.js';
import type { BehaviourBook, TargetReaction } from '../telnyx/call-behaviour.js';
import type { CallLogLine } from '../telnyx/call-log.js';
import type { TwilioVoiceStats } from '../sandbox-stats.js';
import type { CarrierWebhook } from '../webhook-series.js';

/**
 * Twilio Programmable Voice as the sandbox plays it: an inbound call requests our voice URL and
 * follows the TwiML it gets back, as Twilio does: `<Dial action>` rings the target (how it
 * reacts comes from the same behaviours as the Telnyx emulation), then requests the action with
 * the dial's result and follows that answer; `<Record action>` records and requests its action;
 * `<Hangup/>`, `<Reject/>` or an empty `<Response/>` end the call, after which the status
 * callback is sent (with chaos: copies, re-signed copies, delays). Chaos on the requests that
 * ask for TwiML: `duplicate` sends copies at once, and every copy must get the same TwiML back
 * (counted in `mismatched_replies` otherwise); `delay_ms` delays each.
 */

export interface TwilioVoiceSettings {
  publicBaseUrl: string;
  accountSid: string;
  authToken: string;
  /** Call time → real time (shared with the Telnyx emulation). */
  timeScale: () => number;
}

type Verb =
  | { name: 'Dial'; action: string; timeoutSecs: number; to: string }
  | { name: 'Record'; action: string }
  | { name: 'Hangup' | 'Reject' | 'Response' };

/** The one verb our app answers with (it never nests more), read from the TwiML text. */
export function readVerb(twiml: string): Verb | undefined {
  const body = twiml.replace(/^<\?xml[^>]*\?>/, '').trim();
  if (body === '<Response/>' || body === '<Response></Response>') return { name: 'Response' };
  const dial = /^<Response><Dial ([^>]*)><Number>([^<]+)<\/Number><\/Dial><\/Response>$/.exec(body);
  if (dial) {
    const attrs = attributes(dial[1]!);
    if (!attrs.action) return undefined;
    return { name: 'Dial', action: attrs.action, timeoutSecs: Number(attrs.timeout ?? '30'), to: dial[2]! };
  }
  const record = /^<Response><Record ([^>]*)\/><\/Response>$/.exec(body);
  if (record) {
    const { action } = attributes(record[1]!);
    return action ? { name: 'Record', action } : undefined;
  }
  if (body === '<Response><Hangup/></Response>') return { name: 'Hangup' };
  if (body === '<Response><Reject/></Response>') return { name: 'Reject' };
  return undefined;
}

function attributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [, name, value] of text.matchAll(/(\w+)="([^"]*)"/g)) out[name!] = value!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>');
  return out;
}

const sid = (prefix: string) => `${prefix}${randomBytes(16).toString('hex')}`;
/** How long the sandbox's voicemail callers talk, in call time. */
const VOICEMAIL_MS = 3000;
/** A call follows at most this many verbs (a loop in the app's answers would otherwise never end). */
const MAX_STEPS = 30;

interface LiveCall {
  callSid: string;
  from: string;
  to: string;
  startedAt: Date;
  answeredAt?: Date;
  chaos: Chaos;
}

/** A line of the call log for a Twilio call: named by its CallSid. */
export type TwilioCallLogLine = Omit<CallLogLine, 'call_session_id'> & { call_sid: string };

export class TwilioVoiceCalls {
  private readonly ended: TwilioCallLogLine[] = [];

  constructor(
    private readonly engine: SandboxEngine,
    private readonly behaviours: BehaviourBook,
    private readonly settings: TwilioVoiceSettings,
  ) {}

  /** The engine's current counters (a stats reset replaces them). */
  private get stats(): TwilioVoiceStats {
    return this.engine.stats.twilio_voice;
  }

  /** Starts an inbound call; `firstReply` resolves once the voice URL has answered, `done` when the call is over. */
  inbound(from: string, to: string, chaos: Chaos): { callSid: string; firstReply: Promise<void>; done: Promise<void> } {
    const call: LiveCall = { callSid: sid('CA'), from, to, startedAt: new Date(), chaos };
    this.stats.calls++;
    let firstReply!: () => void;
    const replied = new Promise<void>((resolve) => (firstReply = resolve));
    const done = this.run(call, firstReply).catch((err) => {
      if (!(err instanceof SandboxClosed)) this.engine.log(`twilio voice call ${call.callSid} failed: ${(err as Error).message}`);
    }).finally(firstReply);
    return { callSid: call.callSid, firstReply: replied, done };
  }

  /** Ended calls for GET /sandbox/calls/log (`call_sid` lines, as `audit:calls` reads them). */
  log(since?: Date): TwilioCallLogLine[] {
    return this.ended.filter((line) => !since || new Date(line.end_time) >= since);
  }

  private async run(call: LiveCall, firstReply: () => void): Promise<void> {
    let reply = await this.ask(call, `${this.settings.publicBaseUrl}/webhooks/twilio/voice`, this.fields(call, { CallStatus: 'ringing' }));
    firstReply();
    let status = 'no-answer';
    for (let step = 0; step < MAX_STEPS; step++) {
      const verb = reply === undefined ? undefined : readVerb(reply);
      if (!verb) {
        this.stats.bad_replies++;
        status = call.answeredAt ? 'completed' : 'failed';
        break;
      }
      this.stats.verbs[verb.name] = (this.stats.verbs[verb.name] ?? 0) + 1;
      if (verb.name === 'Dial') reply = await this.dial(call, verb);
      else if (verb.name === 'Record') reply = await this.record(call, verb.action);
      else {
        status = call.answeredAt ? 'completed' : verb.name === 'Reject' ? 'busy' : 'no-answer';
        break;
      }
    }
    this.finish(call, status);
  }

  /** Rings the target as its behaviour says, then asks the dial's action what next. */
  private async dial(call: LiveCall, verb: Extract<Verb, { name: 'Dial' }>): Promise<string | undefined> {
    const reaction = this.behaviours.take(verb.to);
    const { waitMs, status, talkMs } = dialOutcome(reaction, verb.timeoutSecs * 1000);
    await this.sleep(waitMs);
    const fields: Record<string, string> = { DialCallSid: sid('CA'), DialCallStatus: status };
    if (status === 'completed') {
      // answerOnBridge: the caller is answered when the target is.
      const answeredAt = new Date();
      call.answeredAt ??= answeredAt;
      await this.sleep(talkMs);
      fields.DialCallDuration = String(realSeconds(answeredAt, new Date()));
    }
    return this.ask(call, verb.action, this.fields(call, { CallStatus: 'in-progress', ...fields }));
  }

  private async record(call: LiveCall, action: string): Promise<string | undefined> {
    call.answeredAt ??= new Date();
    await this.sleep(VOICEMAIL_MS);
    const recordingSid = sid('RE');
    const url = `https://api.twilio.com/2010-04-01/Accounts/${this.settings.accountSid}/Recordings/${recordingSid}`;
    return this.ask(call, action, this.fields(call, { CallStatus: 'in-progress', RecordingSid: recordingSid, RecordingUrl: url, RecordingDuration: String(VOICEMAIL_MS / 1000) }));
  }

  /** The call is over: its log line, and the status callback (a webhook series, under the call's chaos). */
  private finish(call: LiveCall, status: string): void {
    const endedAt = new Date();
    const seconds = call.answeredAt ? realSeconds(call.answeredAt, endedAt) : 0;
    this.ended.push({
      call_sid: call.callSid, from: call.from, to: call.to, status: status as CallLogLine['status'],
      start_time: call.startedAt.toISOString(), end_time: endedAt.toISOString(), duration_secs: seconds,
    });
    const url = `${this.settings.publicBaseUrl}/webhooks/twilio/voice/status`;
    void this.engine.runSeries(call.chaos, [this.signed(`twilio voice status ${status}`, url, this.fields(call, { CallStatus: status, CallDuration: String(seconds) }))]);
  }

  /**
   * One request for TwiML, with `duplicate` copies at once: the answer Twilio follows is the
   * first 200's; every copy must have got the same text.
   */
  private async ask(call: LiveCall, url: string, fields: Record<string, string>): Promise<string | undefined> {
    const copies = Array.from({ length: call.chaos.duplicate }, async () => {
      if (call.chaos.delayMs > 0) await this.engine.timers.sleep(Math.floor(Math.random() * (call.chaos.delayMs + 1)));
      return this.post(url, fields);
    });
    const replies = await Promise.all(copies);
    const ok = replies.filter((r): r is string => r !== undefined);
    if (ok.some((r) => r !== ok[0])) this.stats.mismatched_replies++;
    return ok[0];
  }

  private async post(url: string, fields: Record<string, string>): Promise<string | undefined> {
    for (let attempt = 0; attempt < 3; attempt++) {
      this.stats.requests++;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(this.settings.authToken, url, fields) },
          body: new URLSearchParams(fields).toString(),
          signal: AbortSignal.any([this.engine.timers.signal, AbortSignal.timeout(15_000)]),
        });
        const text = await res.text();
        if (res.ok && /xml/.test(res.headers.get('content-type') ?? '')) return text;
        this.engine.log(`twilio voice ${url}: answered ${res.status} ${text.slice(0, 200)}`);
        if (res.status < 500) return undefined;
      } catch (err) {
        if (this.engine.timers.closed) throw new SandboxClosed();
        this.engine.log(`twilio voice ${url}: ${(err as Error).message}`);
      }
      await this.engine.timers.sleep(250 * 2 ** attempt);
    }
    return undefined;
  }

  private signed(kind: string, url: string, fields: Record<string, string>): CarrierWebhook {
    return {
      kind, url, afterMs: 0, eventId: randomUUID(),
      render: (eventId) => ({
        body: new URLSearchParams(fields).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(this.settings.authToken, url, fields), 'i-twilio-idempotency-token': eventId },
      }),
    };
  }

  private fields(call: LiveCall, extra: Record<string, string>): Record<string, string> {
    return { AccountSid: this.settings.accountSid, ApiVersion: '2010-04-01', CallSid: call.callSid, From: call.from, To: call.to, Direction: 'inbound', ...extra };
  }

  private sleep(callMs: number): Promise<void> {
    return this.engine.timers.sleep(Math.round(callMs * this.settings.timeScale()));
  }
}

/**
 * A Twilio duration (CallDuration, DialCallDuration): real seconds, like the Telnyx events' real
 * `occurred_at`, so both carriers bill the same call alike whatever the time scale; rounded down,
 * so the answer it implies (the end minus it) is never before the call began.
 */
function realSeconds(from: Date, to: Date): number {
  return Math.floor((to.getTime() - from.getTime()) / 1000);
}

/** What a dial to a target with `reaction` comes to within `timeoutMs` (call time): Twilio's DialCallStatus words. */
function dialOutcome(reaction: TargetReaction, timeoutMs: number): { waitMs: number; status: string; talkMs: number } {
  switch (reaction.kind) {
    case 'answer':
      return reaction.afterMs < timeoutMs ? { waitMs: reaction.afterMs, status: 'completed', talkMs: reaction.dropAfterMs ?? reaction.talkMs ?? 2000 } : { waitMs: timeoutMs, status: 'no-answer', talkMs: 0 };
    case 'busy':
    case 'decline':
      return reaction.afterMs < timeoutMs ? { waitMs: reaction.afterMs, status: 'busy', talkMs: 0 } : { waitMs: timeoutMs, status: 'no-answer', talkMs: 0 };
    case 'sip_error':
      return { waitMs: Math.min(reaction.afterMs, timeoutMs), status: 'failed', talkMs: 0 };
    case 'dial_error':
      return { waitMs: 0, status: 'failed', talkMs: 0 };
    default:
      return { waitMs: timeoutMs, status: 'no-answer', talkMs: 0 };
  }
}
