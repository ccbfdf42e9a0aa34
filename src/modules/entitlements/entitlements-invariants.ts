import { Injectable, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { keptSince } from '../../platform/retention/partitioned-tables.js';
import { Invariants, violations } from '../../platform/verify/invariants.js';
import { CUSTOMER_EVENTS_AUDIT_VIEW } from '../webhooks/webhooks-invariants.js';

/** Entitlements' promise: a bundle is granted by one delivery and announced once. */
@Injectable()
export class EntitlementsInvariants implements OnModuleInit {
  constructor(
    private readonly invariants: Invariants,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.invariants.register(
      'entitlements.granted_once',
      'every entitlement has exactly one applied outcome and one entitlement.granted event (entitlement ids)',
      (snapshot, limit) =>
        violations(
          snapshot,
          // Not exactly one `applied` outcome, or not exactly one event announcing it (counted for
          // entitlements younger than the events' retention: an older one's event may have been dropped).
          `SELECT e.id FROM entitlements e
            WHERE (SELECT count(*) FROM entitlement_outcomes o WHERE o.entitlement_id = e.id AND o.outcome = 'applied') <> 1
               OR (e.created_at >= ${keptSince(this.config.CUSTOMER_EVENTS_RETENTION_HOURS)}
                   AND (SELECT count(*) FROM (${CUSTOMER_EVENTS_AUDIT_VIEW}) ev WHERE ev.type = 'entitlement.granted' AND ev.subject_id = e.id) <> 1)`,
          [],
          limit,
        ),
    );
  }
}
