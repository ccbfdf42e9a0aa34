import { DEV_TELNYX_API_KEY, DEV_TWILIO_ACCOUNT_SID, DEV_TWILIO_AUTH_TOKEN } from '../telephony/dev-credentials.js';
import { DEFAULT_SANDBOX_TELNYX_SEED } from '../telephony/telnyx-dev-key.js';

/**
 * What the carrier sandbox reads from the environment. The sandbox is a stand-in for Telnyx and
 * Twilio, so it reads its own settings rather than the product's AppConfig: it knows what a
 * carrier would (where to call back, the credentials it was given), nothing of our internals.
 */
export interface SandboxConfig {
  SANDBOX_PORT: number;
  SANDBOX_CHAOS: string;
  SANDBOX_TELNYX_SEED: string;
  SANDBOX_RECEIPT_DELAY_MS: number;
  SANDBOX_ALLOW_REMOTE: '0' | '1';
  /** Where webhooks go: PUBLIC_BASE_URL, else the app on 127.0.0.1:$PORT (no trailing slash). */
  publicBaseUrl: string;
  TELNYX_API_KEY: string;
  TWILIO_ACCOUNT_SID: string;
  TWILIO_AUTH_TOKEN: string;
  LOG_LEVEL: string;
}

export class SandboxConfigError extends Error {}

function whole(env: Record<string, string | undefined>, key: string, fallback: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new SandboxConfigError(`${key}=${JSON.stringify(raw)}: must be a whole number from ${min} to ${max}`);
  return n;
}

const text = (env: Record<string, string | undefined>, key: string, fallback: string) => (env[key] === undefined || env[key] === '' ? fallback : env[key]!);

export function loadSandboxConfig(env: Record<string, string | undefined> = process.env): SandboxConfig {
  const allowRemote = text(env, 'SANDBOX_ALLOW_REMOTE', '0');
  if (allowRemote !== '0' && allowRemote !== '1') throw new SandboxConfigError(`SANDBOX_ALLOW_REMOTE=${JSON.stringify(allowRemote)}: must be 0 or 1`);
  const port = whole(env, 'PORT', 3000, 0, 65535);
  const publicBaseUrl = text(env, 'PUBLIC_BASE_URL', `http://127.0.0.1:${port}`);
  if (!/^[a-z][a-z0-9+.-]*:\/\/.+/i.test(publicBaseUrl)) throw new SandboxConfigError(`PUBLIC_BASE_URL=${JSON.stringify(publicBaseUrl)}: must be an absolute URL`);
  return {
    SANDBOX_PORT: whole(env, 'SANDBOX_PORT', 3100, 0, 65535),
    SANDBOX_CHAOS: text(env, 'SANDBOX_CHAOS', ''),
    SANDBOX_TELNYX_SEED: text(env, 'SANDBOX_TELNYX_SEED', DEFAULT_SANDBOX_TELNYX_SEED),
    SANDBOX_RECEIPT_DELAY_MS: whole(env, 'SANDBOX_RECEIPT_DELAY_MS', 300, 0, 60_000),
    SANDBOX_ALLOW_REMOTE: allowRemote,
    publicBaseUrl: publicBaseUrl.replace(/\/$/, ''),
    TELNYX_API_KEY: text(env, 'TELNYX_API_KEY', DEV_TELNYX_API_KEY),
    TWILIO_ACCOUNT_SID: text(env, 'TWILIO_ACCOUNT_SID', DEV_TWILIO_ACCOUNT_SID),
    TWILIO_AUTH_TOKEN: text(env, 'TWILIO_AUTH_TOKEN', DEV_TWILIO_AUTH_TOKEN),
    LOG_LEVEL: text(env, 'LOG_LEVEL', 'info'),
  };
}
