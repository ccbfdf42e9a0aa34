import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IdPrefix, newId } from '../../platform/ids.js';
import { exec, queryRows } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import type { PageRequest } from '../../platform/http/pagination.js';
import { fingerprint, IdempotencyKeys, type StoredResponse } from '../../platform/idempotency/idempotency-keys.js';
import { PlaceNumberOrderJob } from './numbers.jobs.js';
import { OutboxService } from '../../platform/outbox/outbox.service.js';
import type { CarrierName } from '../../carriers/carrier-name.js';
import { readOrderView } from './number-order-view.js';
import type { NumberOrderView } from './number-order.dto.js';
import { HELD } from './phone-numbers.service.js';

export interface PlaceOrderRequest {
  carrier: CarrierName;
  phone_numbers: string[];
  country?: string;
}

function orderNotFound(): NotFoundException {
  return new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: 'no phone number order with this id' });
}

/**
 * Orders of numbers. The order, its numbers (held under the partial unique index from this
 * moment: a second account ordering one of them gets a 409), the job that calls the carrier and
 * (with an Idempotency-Key) the stored response commit in one transaction; the carrier is called
 * only after that commit, by PlaceNumberOrderHandler.
 */
@Injectable()
export class NumberOrders {
  constructor(
    private readonly dataSource: DataSource,
    private readonly uow: UnitOfWork,
    private readonly keys: IdempotencyKeys,
    private readonly outbox: OutboxService,
  ) {}

  async place(accountId: string, request: PlaceOrderRequest, idempotencyKey?: string): Promise<StoredResponse & { replayed: boolean }> {
    return this.uow.run(async (tx) => {
      if (idempotencyKey) {
        const claim = await this.keys.claim(tx, accountId, idempotencyKey, fingerprint('POST', '/v2/phone_number_orders', request));
        if (claim.kind === 'replay') return { ...claim.response, replayed: true };
      }
      const orderId = newId(IdPrefix.NumberOrder);
      const { rows } = await exec<{ phone_number: string }>(
        tx,
        // The held-number index decides between orders (and assignments) of one number: a number
        // held elsewhere, even by an uncommitted order that then commits, is not inserted here.
        `WITH ord AS (INSERT INTO number_orders (id, account_id, carrier, country) VALUES ($1, $2, $3, $4) RETURNING id)
         INSERT INTO phone_numbers (id, account_id, phone_number, carrier, country, status, order_id)
         SELECT onceline_id('${IdPrefix.PhoneNumber}'), $2, n, $3, $4, 'ordering', ord.id FROM ord, unnest($5::text[]) AS n
         ON CONFLICT (phone_number) WHERE ${HELD} DO NOTHING
         RETURNING phone_number`,
        [orderId, accountId, request.carrier, request.country ?? 'US', request.phone_numbers],
      );
      const taken = request.phone_numbers.filter((n) => !rows.some((r) => r.phone_number === n));
      if (taken.length > 0) {
        // Rolls back the whole order (and the key's claim): nothing is written.
        throw new ConflictException({
          errors: taken.map((n) => ({ code: 'phone_number_taken', title: 'Phone number held', detail: `${n} is held by another account or order`, source: { pointer: `/phone_numbers/${request.phone_numbers.indexOf(n)}` } })),
        });
      }
      await this.outbox.enqueue(tx, { job: PlaceNumberOrderJob, data: { orderId }, jobId: `place-${orderId}` });
      const response: StoredResponse = { status: 202, body: { data: await readOrderView(tx, accountId, orderId) } };
      if (idempotencyKey) await this.keys.complete(tx, accountId, idempotencyKey, response);
      return { ...response, replayed: false };
    });
  }

  async get(accountId: string, orderId: string): Promise<NumberOrderView> {
    const view = await this.uow.run((tx) => readOrderView(tx, accountId, orderId));
    if (!view) throw orderNotFound();
    return view;
  }

  async list(accountId: string, page: PageRequest): Promise<NumberOrderView[]> {
    const ids: { id: string }[] = await queryRows(this.dataSource.manager,
      `SELECT id FROM number_orders WHERE account_id = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [accountId, page.after ?? null, page.size + 1],
    );
    return this.uow.run(async (tx) => {
      const views: NumberOrderView[] = [];
      for (const { id } of ids) views.push((await readOrderView(tx, accountId, id))!);
      return views;
    });
  }
}
