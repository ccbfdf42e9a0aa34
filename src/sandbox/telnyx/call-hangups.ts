/**
 * The hangup_cause / hangup_source / sip_hangup_cause triple of a Telnyx `call.hangup`.
 * `hangup_source` names the side that sent the hangup, seen from the leg: on an outgoing (dialed)
 * leg we are the caller and the target the callee; on an incoming leg the handset is the caller.
 */
export type HangupCause = 'call_rejected' | 'normal_clearing' | 'originator_cancel' | 'timeout' | 'time_limit' | 'user_busy' | 'unspecified';
export type HangupSource = 'caller' | 'callee' | 'unknown';

export interface Hangup {
  cause: HangupCause;
  source: HangupSource;
  /** SIP response code as Telnyx sends it: a string, `unspecified` when there was none. */
  sip: string;
}

/** How a dialed target ends a leg on its own. */
export const TARGET_HANGUPS = {
  decline: { cause: 'call_rejected', source: 'callee', sip: '603' },
  busy: { cause: 'user_busy', source: 'callee', sip: '486' },
  /** `sip` is replaced by the behaviour's code (503 for `sip_503`). */
  sip_error: { cause: 'unspecified', source: 'callee', sip: '503' },
  /** Telnyx gave up ringing after the dial's timeout_secs and cancelled the INVITE. */
  timeout: { cause: 'timeout', source: 'unknown', sip: '487' },
  /** The sandbox's longest call (Telnyx's time_limit_secs). */
  time_limit: { cause: 'time_limit', source: 'unknown', sip: 'unspecified' },
} as const satisfies Record<string, Hangup>;

export interface LegSide {
  direction: 'incoming' | 'outgoing';
  answered: boolean;
}

/**
 * Our side ends the leg: a `hangup` command, or Telnyx ending the bridged partner of a leg that
 * hung up. A dialed leg still ringing is cancelled (originator_cancel, SIP 487).
 */
export function ourHangup({ direction, answered }: LegSide): Hangup {
  if (direction === 'outgoing') return answered ? { cause: 'normal_clearing', source: 'caller', sip: '200' } : { cause: 'originator_cancel', source: 'caller', sip: '487' };
  return { cause: 'normal_clearing', source: 'callee', sip: answered ? '200' : 'unspecified' };
}

/**
 * The far end hangs up: the handset of an incoming call (before it was answered: it gave up,
 * originator_cancel), or the target of a dialed leg (before answering: a rejection).
 */
export function farEndHangup({ direction, answered }: LegSide): Hangup {
  if (direction === 'incoming') return answered ? { cause: 'normal_clearing', source: 'caller', sip: '200' } : { cause: 'originator_cancel', source: 'caller', sip: '487' };
  return answered ? { cause: 'normal_clearing', source: 'callee', sip: '200' } : TARGET_HANGUPS.decline;
}

/** Hangup causes after which a carrier would not ring that number again for the same call. */
export function isDecline(hangup: Hangup | undefined): boolean {
  return hangup?.cause === 'call_rejected' || hangup?.cause === 'user_busy';
}
