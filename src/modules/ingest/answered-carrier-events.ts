import { Injectable } from '@nestjs/common';
import type { AcceptedWebhook } from '../../carriers/carrier-adapter.js';
import type { NormalizedEvent } from '../../carriers/normalized-event.js';
import { isSerializationConflict, isUniqueViolation } from '../../platform/database/pg-errors.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { IdPrefix, newId } from '../../platform/ids.js';
import { handlerContext, type CarrierEventContext } from './carrier-event-handlers.js';
import type { IngestStatus } from './carrier-event-writer.js';

/** What the owning module decided for an event answered in the request: the answer's text, and why it did nothing (if so). */
export interface EventAnswer {
  reply: string;
  note?: string;
}

/** Decides an event inside the transaction that stores it; runs once per dedupe key. */
export type EventResponder = (event: NormalizedEvent, tx: Tx, context: CarrierEventContext) => Promise<EventAnswer>;

export interface AnsweredEvent {
  status: IngestStatus;
  /** The answer as first decided; null only for a row stored before answers were kept. */
  reply: string | null;
}

const LOCK_CONFLICT_ATTEMPTS = 3;
/** The partial unique index on (carrier, signature_nonce) (migrations/0002_carrier_events.sql). */
const NONCE_INDEX = 'carrier_events_nonce_idx';

/**
 * The first attempt met the signature-nonce index. An identical copy does so when it passed the
 * conflict target's check before the first copy's row was indexed; the first has committed by
 * the time the nonce index refuses the copy, so the same statement run again finds that row
 * through its conflict target and answers from it. A collision again is a different delivery
 * under a used signature (answered 400 by ingest).
 */
const isCopyMeetingNonce = (err: unknown, attempt: number): boolean =>
  attempt === 1 && isUniqueViolation(err) && (err as { constraint?: string }).constraint === NONCE_INDEX;

/**
 * Events the carrier needs an answer to in the same HTTP response (Twilio Voice asks for TwiML).
 * No group commit and no processing job: the row, the decision and its answer commit together,
 * and the row is processed when it commits. A repeat of the same dedupe key waits on the first's
 * row lock and is answered from that row, so one step of a call is decided once, however often
 * (or however concurrently) the carrier asks.
 */
@Injectable()
export class AnsweredCarrierEvents {
  constructor(private readonly uow: UnitOfWork) {}

  async store(accepted: AcceptedWebhook, respond: EventResponder): Promise<AnsweredEvent> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.uow.run((tx) => this.storeIn(tx, accepted, respond));
      } catch (err) {
        if (!(isSerializationConflict(err) || isCopyMeetingNonce(err, attempt)) || attempt >= LOCK_CONFLICT_ATTEMPTS) throw err;
      }
    }
  }

  private async storeIn(tx: Tx, accepted: AcceptedWebhook, respond: EventResponder): Promise<AnsweredEvent> {
    const id = newId(IdPrefix.CarrierEvent);
    const { event } = accepted;
    // ON CONFLICT ... DO UPDATE (a no-op) rather than DO NOTHING: a repeat waits for the first
    // delivery's commit, then locks and RETURNS that committed row with its reply, so the
    // duplicate is answered from the row the statement itself found, never by a second look.
    // A nonce-only collision (the same signature over re-split fields) is a unique violation; so
    // is an identical copy that raced past the conflict target's check (store runs it again).
    const { rows } = await exec<{ id: string; reply: string | null; created_at: Date }>(
      tx,
      `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8)
       ON CONFLICT (carrier, carrier_event_id) DO UPDATE SET carrier_event_id = carrier_events.carrier_event_id
       RETURNING id, reply, created_at`,
      [id, event.carrier, event.carrierEventId, accepted.carrierEventType, event.kind, accepted.payloadJson, JSON.stringify(event), accepted.signatureNonce ?? null],
    );
    const row = rows[0];
    if (row.id !== id) return { status: 'duplicate', reply: row.reply };
    const { context, mark } = handlerContext({ carrierEventId: id, attempt: 1, replay: false, receivedAt: row.created_at });
    const answer = await respond(event, tx, context);
    // processed_at IS NULL: the row this transaction just inserted, answered once (with the responder's fragments).
    await exec(
      tx,
      mark.text(`UPDATE carrier_events SET reply = ${mark.param(answer.reply)}, note = left(${mark.param(answer.note ?? null)}, 2000), processed_at = now(), attempts = 1
                  WHERE id = ${mark.param(id)} AND processed_at IS NULL`),
      mark.params,
    );
    return { status: 'accepted', reply: answer.reply };
  }
}
