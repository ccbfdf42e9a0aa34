import { telnyxFailureReason } from './telnyx-failure-reasons.js';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import {
  CarrierUnavailableError, lookUpPages, messageIdFromUrl, referencedUrl, sendAnswerProblem, sendToCarrier,
  type FoundSend, type MessageSender, type OutboundMessage, type SendResult,
} from '../message-sender.js';

/** Detail records asked for per page (Telnyx's default is 20). */
const LOOKUP_PAGE_SIZE = 50;

/**
 * Sends SMS through Telnyx API v2: POST $TELNYX_API_URL/messages with a bearer key. SendMessage
 * declares no Idempotency-Key (Telnyx honours one only where an operation declares it), so none
 * is sent: the message's own `webhook_url` names our message instead, and comes back in every
 * status webhook's payload (`webhook_url`, signed with the body) and in its detail record.
 */
@Injectable()
export class TelnyxMessageSender implements MessageSender {
  readonly carrier = 'telnyx' as const;

  constructor(private readonly config: AppConfig) {}

  private get auth() {
    return { authorization: `Bearer ${this.config.TELNYX_API_KEY}` };
  }

  async send(message: OutboundMessage): Promise<SendResult> {
    const { response, body } = await sendToCarrier(
      `${this.config.telnyxApiUrl}/messages`,
      {
        headers: { ...this.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ from: message.from, to: message.to, text: message.text, type: 'SMS', webhook_url: referencedUrl(`${this.config.publicBaseUrl}/webhooks/telnyx`, message.id) }),
      },
      this.config.CARRIER_SEND_TIMEOUT_MS,
    );
    if (response.ok) {
      const id = (body.data as { id?: unknown } | undefined)?.id;
      if (typeof id !== 'string') throw new CarrierUnavailableError('Telnyx accepted the message without an id');
      return { outcome: 'accepted', carrierMessageId: id };
    }
    const problem = sendAnswerProblem('Telnyx', response);
    if (problem) throw problem;
    const [first] = (body.errors as { code?: string; title?: string; detail?: string }[] | undefined) ?? [];
    const errorCode = String(first?.code ?? `http_${response.status}`);
    return { outcome: 'rejected', errorCode, errorDetail: first?.detail ?? first?.title ?? `Telnyx answered ${response.status}`, ...telnyxFailureReason(errorCode) };
  }

  /**
   * GET /detail_records (SearchDetailRecords), record_type messaging, from our number to the
   * handset since `since`: the record whose `delivery_status_webhook_url` names our message. Telnyx
   * has no lookup by a reference of ours, and GET /messages/{id} needs the id we lost; a detail
   * record may appear only once the message is final, which the receipt usually precedes.
   * Follows the pages (meta.page_number of meta.total_pages) up to LOOKUP_MAX_PAGES.
   */
  async findSent(message: OutboundMessage, since: Date): Promise<FoundSend | undefined> {
    const query = new URLSearchParams({
      'filter[record_type]': 'messaging',
      'filter[cli]': message.from,
      'filter[cld]': message.to,
      'filter[created_at][gte]': since.toISOString(),
      'page[size]': String(LOOKUP_PAGE_SIZE),
    });
    const url = `${this.config.telnyxApiUrl}/detail_records`;
    // Telnyx pages by number: meta.page_number of meta.total_pages; the next is page[number] + 1.
    const records = await lookUpPages('Telnyx', `${url}?${query}`, this.auth, this.config.CARRIER_SEND_TIMEOUT_MS, (body) => {
      const meta = (body.meta ?? {}) as Record<string, unknown>;
      const [page, pages] = [Number(meta.page_number), Number(meta.total_pages)];
      const next = Number.isInteger(page) && Number.isInteger(pages) && page < pages ? `${url}?${new URLSearchParams({ ...Object.fromEntries(query), 'page[number]': String(page + 1) })}` : undefined;
      return { items: Array.isArray(body.data) ? (body.data as Record<string, unknown>[]) : [], next };
    });
    const ids = records
      .filter((r) => r.direction !== 'inbound' && typeof r.uuid === 'string' && messageIdFromUrl(String(r.delivery_status_webhook_url ?? '')) === message.id)
      .map((r) => r.uuid as string);
    return ids.length > 0 ? { carrierMessageIds: ids } : undefined;
  }
}
