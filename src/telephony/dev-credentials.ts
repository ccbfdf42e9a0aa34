/**
 * The development credentials the carrier sandbox uses and the app accepts while a carrier's API
 * URL points at this machine (never beyond it). Published on purpose: they protect nothing.
 */
export const DEV_TELNYX_API_KEY = 'sandbox-telnyx-key';
/** The Call Control App id of the development setup: sent as `connection_id` on every dial. */
export const DEV_TELNYX_CONNECTION_ID = '1494404757140276705';
/** The Messaging Profile of the development setup: numbers ordered are put on it. */
export const DEV_TELNYX_MESSAGING_PROFILE_ID = '400179c5-8f1c-4dc6-bd4b-6ec1b1f1d0e1';
export const DEV_TWILIO_ACCOUNT_SID = 'AC00000000000000000000000000000000';
/** Published in this repository, so it proves nothing beyond the sandbox. */
export const DEV_TWILIO_AUTH_TOKEN = 'sandbox-twilio-auth-token';
/** Eight characters, as Vonage's API keys are (the Reports API's account_id is the key: minLength 8, maxLength 8). */
export const DEV_VONAGE_API_KEY = 'sandbox1';
export const DEV_VONAGE_API_SECRET = 'sandbox-vonage-api-secret';
/** The Vonage application of the development setup: numbers bought are linked to it. */
export const DEV_VONAGE_APPLICATION_ID = 'aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab';
/** The HS256 secret of the sandbox's signed webhooks: published, so it proves nothing beyond the sandbox. */
export const DEV_VONAGE_SIGNATURE_SECRET = 'sandbox-vonage-signature-secret-0123456789';
/**
 * The development Stripe webhook signing secret (`npm run demo` signs invoice.paid with it).
 * Published here, so it is trusted only while the whole deployment is this machine: see
 * AppConfig.stripeWebhookSecret.
 */
export const DEV_STRIPE_WEBHOOK_SECRET = 'whsec_onceline_development_only';
