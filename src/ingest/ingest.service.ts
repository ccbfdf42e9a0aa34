import { BadRequestException, Injectable, UnauthorizedException } from '@nestjs/common';
import { MalformedWebhook, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../carriers/carrier-adapter.js';
import { newId, IdPrefix } from '../common/ids.js';
import { exec } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { JobName } from '../outbox/job-catalogue.js';
import { OutboxService } from '../outbox/outbox.service.js';

export type IngestStatus = 'accepted' | 'duplicate';

/**
 * The hot path: verify, normalize, then one transaction that stores the event once and enqueues
 * its processing. No business logic and no Redis here: a carrier waits on this answer.
 */
@Injectable()
export class IngestService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly outbox: OutboxService,
  ) {}

  async ingest(adapter: CarrierAdapter, webhook: InboundWebhook): Promise<IngestStatus> {
    return this.store(accept(adapter, webhook));
  }

  private async store(accepted: AcceptedWebhook): Promise<IngestStatus> {
    const { event } = accepted;
    const id = newId(IdPrefix.CarrierEvent);
    try {
      return await this.uow.run(async (tx) => {
        // No conflict target on purpose: (carrier, carrier_event_id) and the partial
        // (carrier, signature_nonce) index both mean "seen this delivery", so either makes it a
        // duplicate with no row, no job, and no error. The guard is the unique index itself.
        const { affected } = await exec(
          tx,
          `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8)
           ON CONFLICT DO NOTHING`,
          [id, event.carrier, event.carrierEventId, accepted.carrierEventType, event.kind, accepted.payloadJson, JSON.stringify(event), accepted.signatureNonce ?? null],
        );
        if (affected === 0) return 'duplicate';
        await this.outbox.enqueue(tx, { name: JobName.ProcessCarrierEvent, data: { carrierEventId: id }, jobId: id });
        return 'accepted';
      });
    } catch (err) {
      // A signed body Postgres cannot hold (a \u0000 in JSON text, a lone surrogate): the
      // carrier's body is at fault, not us, so 400 rather than a 5xx it would retry forever.
      if ((err as { code?: string }).code?.startsWith('22')) throw new BadRequestException(`body cannot be stored: ${(err as Error).message}`);
      throw err;
    }
  }
}

/** Adapter verdict → HTTP: a bad signature is 401, a signed body of the wrong shape 400. */
function accept(adapter: CarrierAdapter, webhook: InboundWebhook): AcceptedWebhook {
  try {
    return adapter.accept(webhook);
  } catch (err) {
    if (err instanceof SignatureRejected) throw new UnauthorizedException({ code: 'invalid_signature', title: 'Signature verification failed', detail: err.message });
    if (err instanceof MalformedWebhook) throw new BadRequestException({ code: 'invalid_event', title: 'Not a valid carrier event', detail: err.message });
    throw err;
  }
}
