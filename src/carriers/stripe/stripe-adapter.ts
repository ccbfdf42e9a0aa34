import { Injectable } from '@nestjs/common';
import Stripe from 'stripe';
import { AppConfig } from '../../platform/config/app-config.js';
import type { BillingEvent } from '../billing-event.js';
import { developmentCredentialProblem, header, MalformedWebhook, SignatureRejected, type InboundWebhook } from '../carrier-adapter.js';
import { id, isObject, object, storableBody, word } from '../shape.js';
import { readPaidInvoice } from './stripe-invoice.js';

export const STRIPE_SIGNATURE_REFUSED = 'Stripe-Signature missing or wrong';
export const STRIPE_TIMESTAMP_REFUSED = 'Stripe-Signature timestamp outside the tolerance';

/**
 * POST /webhooks/billing/stripe: `Stripe-Signature` (HMAC-SHA256 of `t.body`) checked by the
 * official package over the exact bytes received, then the event read into our BillingEvent.
 */
@Injectable()
export class StripeAdapter {
  readonly provider = 'stripe' as const;

  constructor(private readonly config: AppConfig) {}

  /** Rejects with SignatureRejected (401) or MalformedWebhook (400); never touches storage. */
  accept(webhook: InboundWebhook, nowMs = Date.now()): BillingEvent {
    const secret = this.config.stripeWebhookSecret;
    if (!secret) throw new SignatureRejected(STRIPE_SIGNATURE_REFUSED, 'STRIPE_WEBHOOK_SECRET is the development value outside a development deployment: set the real secret');
    const remote = developmentCredentialProblem(this.config.isDevelopmentCredential('stripe'), webhook);
    if (remote) throw new SignatureRejected(STRIPE_SIGNATURE_REFUSED, `STRIPE_WEBHOOK_SECRET: ${remote}`);
    const signature = header(webhook.headers, 'stripe-signature');
    if (!signature) throw new SignatureRejected(STRIPE_SIGNATURE_REFUSED);
    const tolerance = this.config.WEBHOOK_TOLERANCE_SECONDS;
    // The package refuses only a timestamp too old; the contract's window holds both ways.
    const signedAt = Number(/(?:^|,)\s*t=(\d+)/.exec(signature)?.[1]);
    if (signedAt > nowMs / 1000 + tolerance) throw new SignatureRejected(STRIPE_TIMESTAMP_REFUSED);
    const event = verified(webhook.rawBody, signature, secret, tolerance, nowMs);
    storableBody(event);
    const data = object(event, 'data', 'event');
    const providerEventType = word(event, 'type', 'event');
    return {
      provider: this.provider,
      providerEventId: id(event, 'id', 'event'),
      providerEventType,
      // The signed bytes are JSON already: Postgres parses them into jsonb as they are.
      payloadJson: webhook.rawBody.toString('utf8'),
      paidInvoice: providerEventType === 'invoice.paid' ? readPaidInvoice(object(data, 'object', 'data')) : undefined,
    };
  }
}

/** The event the signature covers; the body is parsed only once its signature holds. */
function verified(rawBody: Buffer, signature: string, secret: string, tolerance: number, nowMs: number): Record<string, unknown> {
  let event: unknown;
  try {
    event = Stripe.webhooks.constructEvent(rawBody, signature, secret, tolerance, undefined, nowMs);
  } catch (err) {
    if (err instanceof Stripe.errors.StripeSignatureVerificationError) {
      throw new SignatureRejected(/tolerance/i.test(err.message) ? STRIPE_TIMESTAMP_REFUSED : STRIPE_SIGNATURE_REFUSED);
    }
    if (err instanceof SyntaxError) throw new MalformedWebhook('body must be a JSON Stripe event');
    throw err;
  }
  if (!isObject(event)) throw new MalformedWebhook('body must be a JSON Stripe event');
  return event;
}
