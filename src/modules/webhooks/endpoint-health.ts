import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import type { CteStatement } from '../../platform/database/cte-statement.js';
import { DeliveryScheduler } from './delivery-scheduler.js';

/** Consecutive failures per endpoint; disabling parks what the endpoint is owed. */
@Injectable()
export class EndpointHealth {
  constructor(
    private readonly config: AppConfig,
    private readonly deliveries: DeliveryScheduler,
  ) {}

  /** A success resets the failure count: as a CTE of a statement, for the endpoints of the deliveries CTE `recorded` (endpoint_id) moved. */
  recordSuccessesCte(stmt: CteStatement, recorded: string): void {
    // WHERE consecutive_failures > 0: the common case writes nothing.
    stmt.with('we_healthy', `UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE id IN (SELECT endpoint_id FROM ${recorded}) AND consecutive_failures > 0`);
  }

  /**
   * Counts one failed attempt; disables the endpoint when the endpoint said 410 Gone or the count
   * reached WEBHOOK_DISABLE_AFTER_FAILURES. Returns whether this call disabled it.
   */
  async recordFailure(tx: Tx, endpointId: string, gone: boolean): Promise<boolean> {
    await exec(tx, `UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1 WHERE id = $1`, [endpointId]);
    const max = this.config.WEBHOOK_DISABLE_AFTER_FAILURES;
    const reason = gone
      ? 'endpoint answered 410 Gone'
      : `${max} consecutive failed delivery attempts`;
    // WHERE enabled AND (...): exactly one failing attempt disables it, and only once. The UPDATE
    // above locked the row until commit, so this reads the count it wrote, not a newer one; and
    // parkEndpoint below runs under that lock (an emit's FOR SHARE waits, then sees it disabled).
    const { affected } = await exec(
      tx,
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, disabled_at = now(), updated_at = now()
        WHERE id = $1 AND enabled AND deleted_at IS NULL AND ($3 OR consecutive_failures >= $4)`,
      [endpointId, reason, gone, max],
    );
    if (affected === 0) return false;
    await this.deliveries.parkEndpoint(tx, endpointId);
    return true;
  }
}
