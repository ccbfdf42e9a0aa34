import type { KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxConfig } from './sandbox-config.js';
import type { Chaos } from './chaos.js';
import type { SandboxEngine } from './sandbox-engine.js';
import type { TelnyxCallControl } from './telnyx/telnyx-call-control.js';
import type { TwilioVoiceCalls } from './twilio/twilio-voice-call.js';
import type { SandboxNumbers } from './numbers/sandbox-numbers.js';

/** What a carrier route of the sandbox needs. */
export interface SandboxContext {
  engine: SandboxEngine;
  config: SandboxConfig;
  /** The sandbox's Telnyx signing key (its public half is the app's TELNYX_PUBLIC_KEY in dev). */
  telnyxPrivateKey: KeyObject;
  /** The emulated Telnyx Call Control (legs, behaviours, call log). */
  calls: TelnyxCallControl;
  /** The emulated Twilio Voice (inbound calls that follow the app's TwiML). */
  twilioCalls: TwilioVoiceCalls;
  /** The three carriers' number inventories (search, order, release). */
  numbers: SandboxNumbers;
}

export interface SandboxRequest {
  req: IncomingMessage;
  res: ServerResponse;
  body: string;
  chaos: Chaos;
}
