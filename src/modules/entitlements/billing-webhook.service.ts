import { BadRequestException, Injectable, Logger, UnauthorizedException } from '@nestjs/common';
import { MalformedWebhook, SignatureRejected, type InboundWebhook } from '../../carriers/carrier-adapter.js';
import type { BillingEvent } from '../../carriers/billing-event.js';
import { StripeAdapter } from '../../carriers/stripe/stripe-adapter.js';
import { isDatabaseUnavailable, isSerializationConflict, unstorableReason } from '../../platform/database/pg-errors.js';
import { BillingEvents } from './billing-events.js';
import { InvoiceGrants, type GrantResult } from './invoice-grants.js';

/** Seconds a provider is asked to wait before sending a retryable delivery again. */
export const RETRY_AFTER_SECONDS = 5;

/** The HTTP answer to one billing webhook: `{"outcome": ...}` bodies (docs/contract.md, Entitlements). */
export interface BillingAnswer {
  status: 200 | 409 | 503;
  body: Record<string, unknown>;
  retryAfterSeconds?: number;
}

/** The database could not decide now, and deciding again later is safe: lock wait, deadlock, outage. */
function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string } | undefined)?.code;
  return isDatabaseUnavailable(err) || isSerializationConflict(err) || code === '55P03' || code === '57014';
}

/**
 * Billing webhooks in: verify, record the raw event once, and for a paid invoice grant its
 * bundles through the guarded insert. Refusals (401, 400) write nothing; every other event type
 * is recorded and answered 200 (a provider retries anything else for days).
 */
@Injectable()
export class BillingWebhookService {
  private readonly logger = new Logger(BillingWebhookService.name);

  constructor(
    private readonly stripe: StripeAdapter,
    private readonly events: BillingEvents,
    private readonly grants: InvoiceGrants,
  ) {}

  async receiveStripe(webhook: InboundWebhook): Promise<BillingAnswer> {
    const event = this.accept(webhook);
    try {
      await this.events.record(event);
      if (!event.paidInvoice) return { status: 200, body: { outcome: 'ignored', reason: `${event.providerEventType} grants nothing` } };
      return answer(await this.grants.apply(event, event.paidInvoice));
    } catch (err) {
      const reason = unstorableReason(err);
      if (reason !== undefined) {
        // A signed body Postgres cannot hold (a \u0000 in JSON text, a key too long): the sender's fault, never retried into success.
        this.logger.warn(`${event.provider} event ${event.providerEventId.slice(0, 200)} refused (400), Postgres cannot store it: ${(err as Error).message}`);
        throw new BadRequestException({ code: 'invalid_event', title: 'Not a valid billing event', detail: `the body holds ${reason}` });
      }
      if (!isRetryable(err)) throw err;
      this.logger.warn(`${event.provider} event ${event.providerEventId} answered 503 (retryable): ${(err as Error).message}`);
      return {
        status: 503,
        retryAfterSeconds: RETRY_AFTER_SECONDS,
        body: { outcome: 'retryable', errors: [{ code: 'service_unavailable', title: 'Service unavailable, retry later', detail: 'nothing was granted; send the event again' }] },
      };
    }
  }

  /** Adapter verdict → HTTP: a bad signature or timestamp is 401, a signed body of the wrong shape 400. */
  private accept(webhook: InboundWebhook): BillingEvent {
    try {
      return this.stripe.accept(webhook);
    } catch (err) {
      if (err instanceof SignatureRejected) {
        if (err.internalReason) this.logger.warn(`stripe webhook refused (401): ${err.internalReason}`);
        throw new UnauthorizedException({ code: 'invalid_signature', title: 'Signature verification failed', detail: err.message });
      }
      if (err instanceof MalformedWebhook) throw new BadRequestException({ code: 'invalid_event', title: 'Not a valid billing event', detail: err.message });
      throw err;
    }
  }
}

function answer(result: GrantResult): BillingAnswer {
  if (result.outcome !== 'conflicting_payload') return { status: 200, body: result };
  return {
    status: 409,
    body: {
      ...result,
      errors: [{ code: 'conflicting_payload', title: 'Conflicting payload', detail: 'this invoice already granted these entitlements otherwise; nothing changed, the conflict is recorded' }],
    },
  };
}
