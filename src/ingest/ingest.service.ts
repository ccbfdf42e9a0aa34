import { BadRequestException, Injectable, ServiceUnavailableException, UnauthorizedException } from '@nestjs/common';
import { MalformedWebhook, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../carriers/carrier-adapter.js';
import { isDataError } from '../database/pg-errors.js';
import { CarrierEventWriter, type IngestStatus } from './carrier-event-writer.js';

export type { IngestStatus } from './carrier-event-writer.js';

/**
 * The hot path: verify, normalize, then store the event once and enqueue its processing, in a
 * transaction shared with the deliveries arriving at the same moment. No business logic and no
 * Redis here: a carrier waits on this answer.
 */
@Injectable()
export class IngestService {
  constructor(private readonly writer: CarrierEventWriter) {}

  async ingest(adapter: CarrierAdapter, webhook: InboundWebhook): Promise<IngestStatus> {
    return this.store(await accept(adapter, webhook));
  }

  private async store(accepted: AcceptedWebhook): Promise<IngestStatus> {
    try {
      return await this.writer.write(accepted);
    } catch (err) {
      // A signed body Postgres cannot hold (a \u0000 in JSON text, a lone surrogate): the
      // carrier's body is at fault, not us, so 400 rather than a 5xx it would retry forever.
      if (isDataError(err)) throw new BadRequestException(`body cannot be stored: ${(err as Error).message}`);
      // The batch holding this delivery did not commit: nothing of it is stored, so the carrier
      // must send it again (503 + Retry-After, as for a database outage).
      throw new ServiceUnavailableException({ code: 'service_unavailable', title: 'Event not stored, retry later' });
    }
  }
}

/** Adapter verdict → HTTP: a bad signature is 401, a signed body of the wrong shape 400. */
async function accept(adapter: CarrierAdapter, webhook: InboundWebhook): Promise<AcceptedWebhook> {
  try {
    return await adapter.accept(webhook);
  } catch (err) {
    if (err instanceof SignatureRejected) throw new UnauthorizedException({ code: 'invalid_signature', title: 'Signature verification failed', detail: err.message });
    if (err instanceof MalformedWebhook) throw new BadRequestException({ code: 'invalid_event', title: 'Not a valid carrier event', detail: err.message });
    throw err;
  }
}
