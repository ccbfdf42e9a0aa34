import { BadRequestException, Injectable, Logger, ServiceUnavailableException, UnauthorizedException } from '@nestjs/common';
import { MalformedWebhook, SignatureRejected, type AcceptedWebhook, type CarrierAdapter, type InboundWebhook } from '../../carriers/carrier-adapter.js';
import { AppConfig } from '../../platform/config/app-config.js';
import { ConnectionBudget, type Urgency } from '../../platform/database/connection-budget.js';
import { isUniqueViolation, unstorableReason } from '../../platform/database/pg-errors.js';
import { AnsweredCarrierEvents, type AnsweredEvent, type EventResponder } from './answered-carrier-events.js';
import { urgencyOf } from './carrier-event-processor.js';
import { CarrierEventWriter, type IngestStatus } from './carrier-event-writer.js';
import { IngestMetrics } from './ingest-metrics.js';

export type { IngestStatus } from './carrier-event-writer.js';
export type { AnsweredEvent, EventAnswer, EventResponder } from './answered-carrier-events.js';

/** The caller's mistake when Postgres refuses a value of a signed body (SQLSTATE classes 22 and 54), or undefined. */
function unstorableBody(err: unknown): BadRequestException | undefined {
  const reason = unstorableReason(err);
  return reason === undefined ? undefined : new BadRequestException({ code: 'invalid_event', title: 'Not a valid carrier event', detail: `the body holds ${reason}` });
}

/**
 * The hot path: verify, normalize, then store the event once and enqueue its processing, in a
 * transaction shared with the deliveries arriving at the same moment. No business logic and no
 * Redis here: a carrier waits on this answer. Refusals tell the caller what it sent wrong; what
 * is ours (database text, which credential is missing) goes to the log only.
 */
@Injectable()
export class IngestService {
  private readonly logger = new Logger(IngestService.name);
  /** Deliveries between entering ingest() and their answer: being verified, waiting for a batch, or in one. */
  private pending = 0;

  constructor(
    private readonly writer: CarrierEventWriter,
    private readonly answered: AnsweredCarrierEvents,
    private readonly metrics: IngestMetrics,
    private readonly config: AppConfig,
    private readonly budget: ConnectionBudget,
  ) {}

  async ingest(adapter: CarrierAdapter, webhook: InboundWebhook): Promise<IngestStatus> {
    // Load shedding before any work: past the bound, a retry later costs less than a queue.
    const bound = this.config.INGEST_PENDING_MAX;
    if ((bound > 0 && this.pending >= bound) || this.laneBacklogged('soon')) throw this.overloaded();
    this.pending++;
    try {
      const accepted = await this.accept(adapter, webhook);
      // A call's event waits only behind other calls' work (the lane serves it first), so an
      // inbound SMS backlog refuses the SMS, never a call's next step; and a new call waits
      // behind the calls in progress, so their backlog refuses new calls first.
      const urgency = urgencyOf(accepted.event);
      if ((urgency === 'later' || urgency === 'new') && this.laneBacklogged(urgency)) throw this.overloaded();
      return await this.store(accepted);
    } finally {
      this.pending--;
    }
  }

  private overloaded(): ServiceUnavailableException {
    this.metrics.refusedOverloaded.inc();
    return new ServiceUnavailableException({ code: 'service_unavailable', title: 'Too many deliveries at once, retry later', detail: 'nothing was stored; send the webhook again' });
  }

  /**
   * The realtime lane of this process has more runs waiting for a database connection than
   * INGEST_LANE_BACKLOG_MAX, counting those a new event of `urgency` would wait behind (a call's
   * event: calls' runs only; an SMS: all; a new call or an SMS: also the new calls waiting for the
   * lane's pace, ConnectionBudget.waitingAhead): the carrier is asked to send it later (503 +
   * Retry-After) before anything here waits long enough to time out.
   */
  private laneBacklogged(urgency: Urgency): boolean {
    return this.budget.waitingAhead('realtime', urgency) > this.config.INGEST_LANE_BACKLOG_MAX;
  }

  /**
   * For a carrier that needs its answer in this response (Twilio Voice): verify and normalize as
   * ingest always does, then store the event and let `respond` (the owning module) decide, in one
   * transaction; a repeated delivery gets the stored answer. Same refusals as `ingest`.
   */
  async answer(adapter: CarrierAdapter, webhook: InboundWebhook, respond: EventResponder): Promise<AnsweredEvent> {
    const accepted = await this.accept(adapter, webhook);
    try {
      return await this.answered.store(accepted, respond);
    } catch (err) {
      const refused = unstorableBody(err);
      if (refused) throw refused;
      // The only other unique index is the signature nonce: this signature came with other fields before.
      if (isUniqueViolation(err)) throw new BadRequestException({ code: 'invalid_event', title: 'Not a valid carrier event', detail: 'this signature was already used by a different delivery' });
      this.logger.warn(`${accepted.event.carrier} event ${accepted.event.carrierEventId} not answered (503): ${(err as Error).message}`);
      throw new ServiceUnavailableException({ code: 'service_unavailable', title: 'Event not stored, retry later' });
    }
  }

  private async store(accepted: AcceptedWebhook): Promise<IngestStatus> {
    try {
      return await this.writer.write(accepted);
    } catch (err) {
      // A signed body Postgres cannot hold (a \u0000 in JSON text, a key past its index's
      // limit): the carrier's body is at fault, not us, so 400 rather than a 5xx it would retry
      // forever. The edge bounds (adapters, bodyProblem) should have refused it first.
      const refused = unstorableBody(err);
      if (refused) {
        this.logger.warn(`${accepted.event.carrier} event ${accepted.event.carrierEventId.slice(0, 200)} refused (400), Postgres cannot store it: ${(err as Error).message}`);
        throw refused;
      }
      // The batch holding this delivery did not commit: nothing of it is stored, so the carrier
      // must send it again (503 + Retry-After, as for a database outage).
      throw new ServiceUnavailableException({ code: 'service_unavailable', title: 'Event not stored, retry later' });
    }
  }

  /** Adapter verdict → HTTP: a bad signature is 401, a signed body of the wrong shape 400. */
  private async accept(adapter: CarrierAdapter, webhook: InboundWebhook): Promise<AcceptedWebhook> {
    try {
      return await adapter.accept(webhook);
    } catch (err) {
      if (err instanceof SignatureRejected) {
        if (err.internalReason) this.logger.warn(`${adapter.carrier} webhook refused (401): ${err.internalReason}`);
        throw new UnauthorizedException({ code: 'invalid_signature', title: 'Signature verification failed', detail: err.message });
      }
      if (err instanceof MalformedWebhook) throw new BadRequestException({ code: 'invalid_event', title: 'Not a valid carrier event', detail: err.message });
      throw err;
    }
  }
}
