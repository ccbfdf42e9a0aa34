import { Injectable } from '@nestjs/common';
import type { AcceptedWebhook } from '../../carriers/carrier-adapter.js';
import type { NormalizedEvent } from '../../carriers/normalized-event.js';
import { isSerializationConflict } from '../../platform/database/pg-errors.js';
import { exec, type Tx } from '../../platform/database/tx.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { IdPrefix, newId } from '../../platform/ids.js';
import { createdAtOfId } from '../../platform/retention/id-partition-key.js';
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

/**
 * Events the carrier needs an answer to in the same HTTP response (Twilio Voice asks for TwiML).
 * No group commit and no processing job: the row, the decision and its answer commit together,
 * and the row is processed when it commits. A repeat of the same dedupe key waits on the key's
 * advisory lock the first holds until it commits, and is answered from that row, so one step of a
 * call is decided once, however often (or however concurrently) the carrier asks.
 */
@Injectable()
export class AnsweredCarrierEvents {
  constructor(private readonly uow: UnitOfWork) {}

  async store(accepted: AcceptedWebhook, respond: EventResponder): Promise<AnsweredEvent> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.uow.run((tx) => this.storeIn(tx, accepted, respond));
      } catch (err) {
        if (!isSerializationConflict(err) || attempt >= LOCK_CONFLICT_ATTEMPTS) throw err;
      }
    }
  }

  private async storeIn(tx: Tx, accepted: AcceptedWebhook, respond: EventResponder): Promise<AnsweredEvent> {
    const id = newId(IdPrefix.CarrierEvent);
    const { event } = accepted;
    // The dedupe key's (and signature nonce's) advisory locks first, in a statement of their own
    // (carrier_event_lock, migration 0042): the next statement's snapshot is taken once they are
    // granted, so it sees a twin that committed meanwhile, in any partition, and a twin not yet
    // committed holds them. A repeat is answered from the stored row that statement found, never
    // by a second look; a nonce-only collision within a partition (the same signature over other
    // fields) is a unique violation (answered 400 by ingest).
    await exec(tx, 'SELECT carrier_event_lock($1, $2, $3)', [event.carrier, event.carrierEventId, accepted.signatureNonce ?? null]);
    // NOT EXISTS twin: only when no partition holds the key. created_at from the id (its partition follows from it).
    const { rows } = await exec<{ id: string; reply: string | null; created_at: Date }>(
      tx,
      `WITH twin AS (SELECT id, reply, created_at FROM carrier_events WHERE carrier = $2 AND carrier_event_id = $3 LIMIT 1),
            inserted AS (
              INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce, created_at)
              SELECT $1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, onceline_id_time($1) WHERE NOT EXISTS (SELECT FROM twin)
              RETURNING id, reply, created_at)
       SELECT id, reply, created_at FROM inserted UNION ALL SELECT id, reply, created_at FROM twin`,
      [id, event.carrier, event.carrierEventId, accepted.carrierEventType, event.kind, accepted.payloadJson, JSON.stringify(event), accepted.signatureNonce ?? null],
    );
    const row = rows[0];
    if (row.id !== id) return { status: 'duplicate', reply: row.reply };
    const { context, mark } = handlerContext({ carrierEventId: id, attempt: 1, replay: false, receivedAt: row.created_at });
    const answer = await respond(event, tx, context);
    // processed_at IS NULL: the row this transaction just inserted, answered once (with the responder's fragments).
    const idParam = mark.param(id);
    await exec(
      tx,
      mark.text(`UPDATE carrier_events SET reply = ${mark.param(answer.reply)}, note = left(${mark.param(answer.note ?? null)}, 2000), processed_at = now(), attempts = 1
                  WHERE id = ${idParam} AND ${createdAtOfId(idParam)} AND processed_at IS NULL`),
      mark.params,
    );
    return { status: 'accepted', reply: answer.reply };
  }
}
