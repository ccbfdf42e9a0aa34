import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Invariants, violations } from '../../platform/verify/invariants.js';

/**
 * Customer events as other modules' invariants may read them: `subject_id` is the id of what the
 * event is about (the `id` of its data: a message, later a call).
 */
export const CUSTOMER_EVENTS_AUDIT_VIEW = `SELECT id, account_id, type, payload->>'id' AS subject_id FROM outbound_events`;

/** Webhooks' promise: what a customer is owed is delivered, or waits only on their own endpoint. */
@Injectable()
export class WebhooksInvariants implements OnModuleInit {
  constructor(private readonly invariants: Invariants) {}

  onModuleInit(): void {
    this.invariants.register(
      'webhooks.parked_only_on_disabled_endpoints',
      'no delivery is parked on an enabled (or deleted) endpoint, where nothing would ever resume it (delivery ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // Parked, yet its endpoint is enabled (only an enable resumes parked deliveries) or
          // deleted (a delete fails what was owed in its own transaction).
          `SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.status = 'parked' AND (e.enabled OR e.deleted_at IS NOT NULL)`,
          [],
          limit,
        ),
    );
  }
}
