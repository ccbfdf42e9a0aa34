import { Injectable, NotFoundException, UnprocessableEntityException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IdPrefix, newId } from '../../platform/ids.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { exec, queryRows, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import { AddressPolicy } from './address-policy.js';
import { deliveriesOfEndpoint } from './deliveries.query.js';
import { DeliveryScheduler } from './delivery-scheduler.js';
import type { CreateEndpointDto, DeliveryView, EndpointView, EndpointWithSecretView, SecretView, UpdateEndpointDto } from './endpoint.dto.js';
import { CUSTOMER_EVENT_TYPES } from './event-types.js';
import { generateSecret } from './signing.js';

/** How long the previous secret keeps signing after rotate_secret. */
const ROTATION_OVERLAP_HOURS = 24;

const ENDPOINT_COLUMNS = `id, url, event_types, description, enabled, disabled_reason, consecutive_failures, created_at, updated_at`;

interface EndpointRow {
  id: string;
  url: string;
  event_types: string[] | null;
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  consecutive_failures: number;
  created_at: Date;
  updated_at: Date;
  secret?: string;
}

function toView(row: EndpointRow): EndpointView {
  return {
    id: row.id,
    record_type: 'webhook_endpoint',
    url: row.url,
    event_types: row.event_types ?? [...CUSTOMER_EVENT_TYPES],
    description: row.description,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    consecutive_failures: row.consecutive_failures,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function notFound(id: string): NotFoundException {
  return new NotFoundException(`webhook endpoint ${id} not found`);
}

/** Webhook endpoints of one account; every statement is scoped by account_id and live (not deleted) rows. */
@Injectable()
export class EndpointsService {
  private readonly policy: AddressPolicy;

  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
    private readonly scheduler: DeliveryScheduler,
    config: AppConfig,
  ) {
    this.policy = new AddressPolicy(config.WEBHOOK_ALLOWED_CIDRS);
  }

  async create(accountId: string, dto: CreateEndpointDto): Promise<EndpointWithSecretView> {
    this.checkUrl(dto.url);
    const [row]: EndpointRow[] = await queryRows(this.dataSource.manager,
      `INSERT INTO webhook_endpoints (id, account_id, url, event_types, description, secret)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${ENDPOINT_COLUMNS}, secret`,
      [newId(IdPrefix.WebhookEndpoint), accountId, dto.url, dto.event_types ?? null, dto.description ?? null, generateSecret()],
    );
    return { ...toView(row), secret: row.secret! };
  }

  async list(accountId: string, page: PageRequest): Promise<EndpointView[]> {
    const rows: EndpointRow[] = await queryRows(this.dataSource.manager,
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints
        WHERE account_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR id < $2)
        ORDER BY id DESC LIMIT $3`,
      [accountId, page.after ?? null, page.size + 1],
    );
    return rows.map(toView);
  }

  async get(accountId: string, id: string): Promise<EndpointView> {
    const [row]: EndpointRow[] = await queryRows(this.dataSource.manager,
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
      [id, accountId],
    );
    if (!row) throw notFound(id);
    return toView(row);
  }

  async update(accountId: string, id: string, dto: UpdateEndpointDto): Promise<EndpointView> {
    if (dto.url !== undefined) this.checkUrl(dto.url);
    // Absent fields keep their value; event_types null means every type again.
    const { rows } = await exec<EndpointRow>(
      this.dataSource.manager,
      `UPDATE webhook_endpoints
          SET url = coalesce($3, url),
              event_types = CASE WHEN $4 THEN $5::text[] ELSE event_types END,
              description = CASE WHEN $6 THEN $7 ELSE description END,
              updated_at = now()
        WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL
        RETURNING ${ENDPOINT_COLUMNS}`,
      [id, accountId, dto.url ?? null, dto.event_types !== undefined, dto.event_types ?? null, dto.description !== undefined, dto.description ?? null],
    );
    if (rows.length === 0) throw notFound(id);
    return toView(rows[0]);
  }

  async remove(accountId: string, id: string): Promise<EndpointView> {
    return this.uow.run(async (tx) => {
      // WHERE deleted_at IS NULL: deleted once; what it was still owed fails in the same transaction.
      const { rows } = await exec<EndpointRow>(
        tx,
        `UPDATE webhook_endpoints SET deleted_at = now(), updated_at = now()
          WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL RETURNING ${ENDPOINT_COLUMNS}`,
        [id, accountId],
      );
      if (rows.length === 0) throw notFound(id);
      // Under the row lock: an emit's FOR SHARE waits for this, so no delivery to it commits after.
      await this.scheduler.failForDeletedEndpoint(tx, id);
      return toView(rows[0]);
    });
  }

  /** Re-enables the endpoint and resumes its parked deliveries (enabling an enabled endpoint is a no-op). */
  async enable(accountId: string | undefined, id: string): Promise<EndpointView & { resumed_deliveries: number }> {
    return this.uow.run(async (tx) => {
      const resumed = await this.enableInTx(tx, accountId, id);
      // The answer only: the row as enabled (locked) or as it is now, never a decision.
      const [row] = await queryRows<EndpointRow>(tx, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1`, [id]);
      return { ...toView(row), resumed_deliveries: resumed };
    });
  }

  private async enableInTx(tx: Tx, accountId: string | undefined, id: string): Promise<number> {
    // WHERE NOT enabled: one enable resumes the parked deliveries; a second finds nothing to do.
    const { affected } = await exec(
      tx,
      `UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL, disabled_at = NULL, consecutive_failures = 0, updated_at = now()
        WHERE id = $1 AND ($2::text IS NULL OR account_id = $2) AND deleted_at IS NULL AND NOT enabled`,
      [id, accountId ?? null],
    );
    if (affected === 0) {
      // A newer snapshot may explain the 0: deleted_at and account_id never change back, so it sees why the UPDATE did.
      const { rows } = await exec(tx, `SELECT 1 FROM webhook_endpoints WHERE id = $1 AND ($2::text IS NULL OR account_id = $2) AND deleted_at IS NULL`, [id, accountId ?? null]);
      if (rows.length === 0) throw notFound(id);
      return 0;
    }
    // Under the row lock the UPDATE took: an emit in flight has committed its parked rows, a later one sees enabled.
    return this.scheduler.resumeEndpoint(tx, id);
  }

  async rotateSecret(accountId: string, id: string): Promise<SecretView> {
    // The old secret keeps signing for the overlap; rotating twice drops the oldest at once.
    const { rows } = await exec<{ secret: string; previous_secret_expires_at: Date }>(
      this.dataSource.manager,
      `UPDATE webhook_endpoints
          SET previous_secret = secret, previous_secret_expires_at = now() + make_interval(hours => $4),
              secret = $3, updated_at = now()
        WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL
        RETURNING secret, previous_secret_expires_at`,
      [id, accountId, generateSecret(), ROTATION_OVERLAP_HOURS],
    );
    if (rows.length === 0) throw notFound(id);
    return { secret: rows[0].secret, previous_secret_expires_at: rows[0].previous_secret_expires_at.toISOString() };
  }

  async secret(accountId: string, id: string): Promise<SecretView> {
    const [row] = await queryRows(this.dataSource.manager,
      `SELECT secret, CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS expires
         FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
      [id, accountId],
    );
    if (!row) throw notFound(id);
    return { secret: row.secret, previous_secret_expires_at: row.expires ? new Date(row.expires).toISOString() : null };
  }

  async deliveries(accountId: string, id: string, status: string | undefined, page: PageRequest): Promise<DeliveryView[]> {
    await this.get(accountId, id);
    return deliveriesOfEndpoint(this.dataSource.manager, id, status, page);
  }

  /** http/https only, no credentials, and no literal address the SSRF guard would refuse anyway. */
  private checkUrl(raw: string): void {
    const problem = (detail: string) =>
      new UnprocessableEntityException({ errors: [{ code: 'validation_failed', title: 'Validation failed', detail, source: { pointer: '/url' } }] });
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw problem('url must be an absolute http or https URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw problem('url must use http or https');
    if (url.username || url.password) throw problem('url must not contain credentials');
    const refusal = this.policy.literalRefusal(url.hostname);
    if (refusal) throw problem(`url host is not allowed: ${refusal}`);
  }
}
