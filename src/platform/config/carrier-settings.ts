import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { isLoopbackUrl } from '../net/loopback.js';
import {
  DEV_STRIPE_WEBHOOK_SECRET, DEV_TELNYX_API_KEY, DEV_TELNYX_CONNECTION_ID, DEV_TWILIO_ACCOUNT_SID, DEV_TWILIO_AUTH_TOKEN,
  DEV_VONAGE_API_KEY, DEV_VONAGE_API_SECRET, DEV_VONAGE_SIGNATURE_SECRET, DEV_TELNYX_MESSAGING_PROFILE_ID, DEV_VONAGE_APPLICATION_ID,
} from '../../telephony/dev-credentials.js';
import { DEFAULT_SANDBOX_TELNYX_SEED, telnyxDevKeyPair } from '../../telephony/telnyx-dev-key.js';
import { ServerSettings } from './server-settings.js';
import { toInt, URL_RE } from './setting-parsers.js';

/**
 * The carriers' (and Stripe's) settings: where we call each carrier, the credentials we call and
 * verify their webhooks with, and the rule that a published development credential counts only
 * while everything is this machine (the sandbox).
 */
export class CarrierSettings extends ServerSettings {
  @IsOptional() @Matches(/^[A-Za-z0-9+/]{43}=$/, { message: 'must be the base64 of a raw 32-byte Ed25519 public key' })
  TELNYX_PUBLIC_KEY?: string;

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  TELNYX_API_URL?: string;

  @IsOptional() @IsString()
  TELNYX_API_KEY = DEV_TELNYX_API_KEY;

  /** The Call Control application id sent as `connection_id` on every dial. */
  @IsOptional() @IsString()
  TELNYX_CONNECTION_ID = DEV_TELNYX_CONNECTION_ID;

  /** The Messaging Profile numbers we order are put on (their messaging webhooks come to us). */
  @IsOptional() @IsString()
  TELNYX_MESSAGING_PROFILE_ID = DEV_TELNYX_MESSAGING_PROFILE_ID;

  @IsOptional() @IsString()
  TWILIO_ACCOUNT_SID = DEV_TWILIO_ACCOUNT_SID;

  /** Sends always use it as set (a wrong one only gets our request refused); webhooks: see twilioWebhookAuthToken. */
  @IsOptional() @IsString()
  TWILIO_AUTH_TOKEN = DEV_TWILIO_AUTH_TOKEN;

  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  TWILIO_API_URL?: string;

  /** The HS256 secret Vonage signs webhooks with; webhooks: see vonageSignatureSecret. */
  @IsOptional() @IsString()
  VONAGE_SIGNATURE_SECRET = DEV_VONAGE_SIGNATURE_SECRET;

  /** Vonage API base without a path (production https://api.nexmo.com); we call $VONAGE_API_URL/v1/messages. */
  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  VONAGE_API_URL?: string;

  @IsOptional() @IsString()
  VONAGE_API_KEY = DEV_VONAGE_API_KEY;

  @IsOptional() @IsString()
  VONAGE_API_SECRET = DEV_VONAGE_API_SECRET;

  /** Vonage's Numbers API base (production https://rest.nexmo.com); VONAGE_API_URL (the sandbox) unless set. */
  @IsOptional() @Matches(URL_RE, { message: 'must be an absolute URL' })
  VONAGE_NUMBERS_API_URL?: string;

  /** The Vonage application numbers we buy are linked to (its inbound and status URLs are ours). */
  @IsOptional() @IsString()
  VONAGE_APPLICATION_ID = DEV_VONAGE_APPLICATION_ID;

  /** Stripe webhook signing secret (`Stripe-Signature`); see stripeWebhookSecret for the development value. */
  @IsOptional() @Matches(/^whsec_[A-Za-z0-9+/=_-]+$/, { message: 'must be a Stripe webhook signing secret (whsec_...)' })
  STRIPE_WEBHOOK_SECRET = DEV_STRIPE_WEBHOOK_SECRET;

  @Transform(toInt) @Min(1) @Max(86400) @IsInt()
  WEBHOOK_TOLERANCE_SECONDS = 300;

  @Transform(toInt) @Min(0) @Max(65535) @IsInt()
  SANDBOX_PORT = 3100;

  /**
   * Seed phrase of the sandbox's Telnyx signing key pair: the app derives the matching public key
   * (see telnyxPublicKey). The sandbox's other settings are its own (src/sandbox/sandbox-config.ts).
   */
  @IsString()
  SANDBOX_TELNYX_SEED = DEFAULT_SANDBOX_TELNYX_SEED;

  /** Where we call Telnyx: the sandbox unless configured (production https://api.telnyx.com/v2). */
  get telnyxApiUrl(): string {
    return (this.TELNYX_API_URL ?? `http://127.0.0.1:${this.SANDBOX_PORT}/v2`).replace(/\/$/, '');
  }

  /** Where we call Twilio: the sandbox unless configured (production https://api.twilio.com). */
  get twilioApiUrl(): string {
    return (this.TWILIO_API_URL ?? `http://127.0.0.1:${this.SANDBOX_PORT}/twilio`).replace(/\/$/, '');
  }

  /**
   * The key Telnyx webhooks are verified with. Unset, it is the sandbox's dev key, but only while
   * we send to a loopback Telnyx API (the sandbox): a deployment pointed at the real Telnyx without
   * TELNYX_PUBLIC_KEY verifies nothing rather than trusting a published development key. Set to
   * that published key (the default seed's), it is trusted on the same terms.
   */
  get telnyxPublicKey(): string | undefined {
    const sandbox = isLoopbackUrl(this.telnyxApiUrl);
    if (!this.TELNYX_PUBLIC_KEY) return sandbox ? telnyxDevKeyPair(this.SANDBOX_TELNYX_SEED).publicKey : undefined;
    return trustedCredential(this.TELNYX_PUBLIC_KEY, telnyxDevKeyPair(DEFAULT_SANDBOX_TELNYX_SEED).publicKey, sandbox);
  }

  /**
   * The token Twilio webhooks are verified with: TWILIO_AUTH_TOKEN, except its published
   * development value while TWILIO_API_URL is not loopback (undefined: every Twilio webhook is
   * refused until the real token is set). Sending is not affected: see TWILIO_AUTH_TOKEN.
   */
  get twilioWebhookAuthToken(): string | undefined {
    return trustedCredential(this.TWILIO_AUTH_TOKEN, DEV_TWILIO_AUTH_TOKEN, isLoopbackUrl(this.twilioApiUrl));
  }

  /** Where we search, buy and cancel Vonage numbers. */
  get vonageNumbersApiUrl(): string {
    return (this.VONAGE_NUMBERS_API_URL ?? this.vonageApiUrl).replace(/\/$/, '');
  }

  /** Where we call Vonage: the sandbox unless configured (production https://api.nexmo.com). */
  get vonageApiUrl(): string {
    return (this.VONAGE_API_URL ?? `http://127.0.0.1:${this.SANDBOX_PORT}`).replace(/\/$/, '');
  }

  /**
   * The secret Vonage webhook tokens are verified with: VONAGE_SIGNATURE_SECRET, except its
   * published development value while VONAGE_API_URL is not loopback (undefined: every Vonage
   * webhook is refused until the real secret is set).
   */
  get vonageSignatureSecret(): string | undefined {
    return trustedCredential(this.VONAGE_SIGNATURE_SECRET, DEV_VONAGE_SIGNATURE_SECRET, isLoopbackUrl(this.vonageApiUrl));
  }

  /**
   * The secret Stripe webhooks are verified with: STRIPE_WEBHOOK_SECRET, except its published
   * development value outside a development deployment (undefined: every Stripe webhook is refused
   * until the real secret is set). We never call Stripe, so there is no Stripe API URL to tell the
   * sandbox by: a deployment is a development one while everything it talks to and is reached at
   * is this machine (PUBLIC_BASE_URL and every carrier API URL loopback). Anything pointed beyond
   * it is a real deployment, where a secret published in this repository protects nothing.
   */
  get stripeWebhookSecret(): string | undefined {
    return trustedCredential(this.STRIPE_WEBHOOK_SECRET, DEV_STRIPE_WEBHOOK_SECRET, this.isDevelopmentDeployment);
  }

  /**
   * Whether the credential this carrier's (or Stripe's) webhooks are verified with is a published
   * development one: the sandbox's Telnyx key (TELNYX_PUBLIC_KEY unset, or the default seed's),
   * the sandbox Twilio token, the development Vonage and Stripe secrets. Such a webhook is taken
   * only from a loopback peer (see developmentCredentialProblem).
   */
  isDevelopmentCredential(of: 'telnyx' | 'twilio' | 'vonage' | 'stripe'): boolean {
    switch (of) {
      case 'telnyx':
        return !this.TELNYX_PUBLIC_KEY || this.TELNYX_PUBLIC_KEY === telnyxDevKeyPair(DEFAULT_SANDBOX_TELNYX_SEED).publicKey;
      case 'twilio':
        return this.TWILIO_AUTH_TOKEN === DEV_TWILIO_AUTH_TOKEN;
      case 'vonage':
        return this.VONAGE_SIGNATURE_SECRET === DEV_VONAGE_SIGNATURE_SECRET;
      case 'stripe':
        return this.STRIPE_WEBHOOK_SECRET === DEV_STRIPE_WEBHOOK_SECRET;
    }
  }

  /** The webhook credentials in use that are development ones, for the start-up log. */
  get developmentWebhookCredentials(): string[] {
    const names = { telnyx: 'Telnyx webhook key (sandbox)', twilio: 'Twilio auth token (sandbox)', vonage: 'Vonage signature secret (development)', stripe: 'Stripe webhook secret (development)' } as const;
    const trusted = { telnyx: this.telnyxPublicKey, twilio: this.twilioWebhookAuthToken, vonage: this.vonageSignatureSecret, stripe: this.stripeWebhookSecret };
    return (['telnyx', 'twilio', 'vonage', 'stripe'] as const).filter((of) => trusted[of] !== undefined && this.isDevelopmentCredential(of)).map((of) => names[of]);
  }

  /** Reached at and talking to this machine only: the sandbox set-up of `npm start` and the tests. */
  get isDevelopmentDeployment(): boolean {
    return [this.publicBaseUrl, this.telnyxApiUrl, this.twilioApiUrl, this.vonageApiUrl, this.vonageNumbersApiUrl].every(isLoopbackUrl);
  }
}

/**
 * The contract's rule for a carrier credential: its published development value is accepted only
 * while that carrier's API URL points at this machine (the sandbox); anywhere else it is no
 * credential at all (undefined), so a forger who read this repository cannot sign webhooks.
 */
function trustedCredential(credential: string, developmentValue: string, apiIsSandbox: boolean): string | undefined {
  return credential === developmentValue && !apiIsSandbox ? undefined : credential;
}
