import {
  DEV_TELNYX_API_KEY, DEV_TELNYX_CONNECTION_ID, DEV_TWILIO_ACCOUNT_SID, DEV_TWILIO_AUTH_TOKEN,
  DEV_VONAGE_API_KEY, DEV_VONAGE_API_SECRET, DEV_VONAGE_SIGNATURE_SECRET,
} from '../telephony/dev-credentials.js';
import { DEFAULT_SANDBOX_TELNYX_SEED } from '../telephony/telnyx-dev-key.js';

/**
 * What the carrier sandbox reads from the environment. The sandbox is a stand-in for Telnyx,
 * Twilio and Vonage, so it reads its own settings rather than the product's AppConfig: it knows what a
 * carrier would (where to call back, the credentials it was given), nothing of our internals.
 */
export interface SandboxConfig {
  SANDBOX_PORT: number;
  SANDBOX_CHAOS: string;
  SANDBOX_TELNYX_SEED: string;
  SANDBOX_RECEIPT_DELAY_MS: number;
  SANDBOX_ALLOW_REMOTE: '0' | '1';
  /** Real time per unit of call time for emulated calls (ring timeouts, behaviours, limits): 0.01 makes a 20 s ring take 200 ms. */
  SANDBOX_CALL_TIME_SCALE: number;
  /** Where webhooks go: PUBLIC_BASE_URL, else the app on 127.0.0.1:$PORT (no trailing slash). */
  publicBaseUrl: string;
  TELNYX_API_KEY: string;
  /** The Call Control App dials must name; undefined: any non-empty connection_id is taken. */
  TELNYX_CONNECTION_ID: string | undefined;
  /** The connection_id of inbound calls' events. */
  inboundConnectionId: string;
  TWILIO_ACCOUNT_SID: string;
  TWILIO_AUTH_TOKEN: string;
  VONAGE_API_KEY: string;
  VONAGE_API_SECRET: string;
  /** The HS256 secret the sandbox signs Vonage webhook tokens with. */
  VONAGE_SIGNATURE_SECRET: string;
  LOG_LEVEL: string;
  /** Percent of number purchases refused (sold to someone else between search and order). */
  SANDBOX_NUMBER_FAILURE_PERCENT: number;
  /** Percent of number purchases whose answer is lost (the purchase happens, the connection is cut). */
  SANDBOX_NUMBER_LOST_ANSWER_PERCENT: number;
  /** How long a Telnyx number order stays pending before number_order.complete. */
  SANDBOX_NUMBER_ORDER_DELAY_MS: number;
  /** Message segments per second each sending number may send before a 429 (0: no limit). */
  SANDBOX_SEND_RATE_PER_NUMBER: number;
  /**
   * '1': a repeated Idempotency-Key (Vonage: client_ref) answers the first send's message, for
   * comparison only. '0' (the default): ignored, as the real carriers ignore them on sends (no
   * send operation of theirs declares one), so a retried send is a second SMS.
   */
  SANDBOX_HONOUR_IDEMPOTENCY: '0' | '1';
}

export class SandboxConfigError extends Error {}

function whole(env: Record<string, string | undefined>, key: string, fallback: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new SandboxConfigError(`${key}=${JSON.stringify(raw)}: must be a whole number from ${min} to ${max}`);
  return n;
}

/** Time scales from 1/1000 to 1000. */
function scale(env: Record<string, string | undefined>, key: string): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return 1;
  const n = Number(raw);
  if (!isValidTimeScale(n)) throw new SandboxConfigError(`${key}=${JSON.stringify(raw)}: must be a number from 0.001 to 1000`);
  return n;
}

export function isValidTimeScale(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0.001 && n <= 1000;
}

const text = (env: Record<string, string | undefined>, key: string, fallback: string) => (env[key] === undefined || env[key] === '' ? fallback : env[key]!);

export function loadSandboxConfig(env: Record<string, string | undefined> = process.env): SandboxConfig {
  const allowRemote = text(env, 'SANDBOX_ALLOW_REMOTE', '0');
  if (allowRemote !== '0' && allowRemote !== '1') throw new SandboxConfigError(`SANDBOX_ALLOW_REMOTE=${JSON.stringify(allowRemote)}: must be 0 or 1`);
  const honourIdempotency = text(env, 'SANDBOX_HONOUR_IDEMPOTENCY', '0');
  if (honourIdempotency !== '0' && honourIdempotency !== '1') throw new SandboxConfigError(`SANDBOX_HONOUR_IDEMPOTENCY=${JSON.stringify(honourIdempotency)}: must be 0 or 1`);
  const port = whole(env, 'PORT', 3000, 0, 65535);
  const publicBaseUrl = text(env, 'PUBLIC_BASE_URL', `http://127.0.0.1:${port}`);
  if (!/^[a-z][a-z0-9+.-]*:\/\/.+/i.test(publicBaseUrl)) throw new SandboxConfigError(`PUBLIC_BASE_URL=${JSON.stringify(publicBaseUrl)}: must be an absolute URL`);
  return {
    SANDBOX_PORT: whole(env, 'SANDBOX_PORT', 3100, 0, 65535),
    SANDBOX_CHAOS: text(env, 'SANDBOX_CHAOS', ''),
    SANDBOX_TELNYX_SEED: text(env, 'SANDBOX_TELNYX_SEED', DEFAULT_SANDBOX_TELNYX_SEED),
    SANDBOX_RECEIPT_DELAY_MS: whole(env, 'SANDBOX_RECEIPT_DELAY_MS', 300, 0, 60_000),
    SANDBOX_ALLOW_REMOTE: allowRemote,
    SANDBOX_CALL_TIME_SCALE: scale(env, 'SANDBOX_CALL_TIME_SCALE'),
    publicBaseUrl: publicBaseUrl.replace(/\/$/, ''),
    TELNYX_API_KEY: text(env, 'TELNYX_API_KEY', DEV_TELNYX_API_KEY),
    TELNYX_CONNECTION_ID: env.TELNYX_CONNECTION_ID || undefined,
    inboundConnectionId: text(env, 'TELNYX_CONNECTION_ID', DEV_TELNYX_CONNECTION_ID),
    TWILIO_ACCOUNT_SID: text(env, 'TWILIO_ACCOUNT_SID', DEV_TWILIO_ACCOUNT_SID),
    TWILIO_AUTH_TOKEN: text(env, 'TWILIO_AUTH_TOKEN', DEV_TWILIO_AUTH_TOKEN),
    VONAGE_API_KEY: text(env, 'VONAGE_API_KEY', DEV_VONAGE_API_KEY),
    VONAGE_API_SECRET: text(env, 'VONAGE_API_SECRET', DEV_VONAGE_API_SECRET),
    VONAGE_SIGNATURE_SECRET: text(env, 'VONAGE_SIGNATURE_SECRET', DEV_VONAGE_SIGNATURE_SECRET),
    LOG_LEVEL: text(env, 'LOG_LEVEL', 'info'),
    SANDBOX_NUMBER_FAILURE_PERCENT: whole(env, 'SANDBOX_NUMBER_FAILURE_PERCENT', 0, 0, 100),
    SANDBOX_NUMBER_LOST_ANSWER_PERCENT: whole(env, 'SANDBOX_NUMBER_LOST_ANSWER_PERCENT', 0, 0, 100),
    SANDBOX_NUMBER_ORDER_DELAY_MS: whole(env, 'SANDBOX_NUMBER_ORDER_DELAY_MS', 500, 0, 600_000),
    SANDBOX_SEND_RATE_PER_NUMBER: whole(env, 'SANDBOX_SEND_RATE_PER_NUMBER', 0, 0, 100_000),
    SANDBOX_HONOUR_IDEMPOTENCY: honourIdempotency,
  };
}
