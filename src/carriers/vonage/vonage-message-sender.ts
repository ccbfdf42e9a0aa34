import { vonageFailureReason } from './vonage-failure-reasons.js';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import {
  CarrierUnavailableError, lookUpPages, sendAnswerProblem, sendToCarrier,
  type FoundSend, type MessageSender, type OutboundMessage, type SendResult,
} from '../message-sender.js';

/** Vonage's error `type` ends in the numeric code: `https://developer.vonage.com/api-errors/messages#1150`. */
const ERROR_CODE = /#(\w+)$/;
/** The Reports API's synchronous records span at most 24 hours (date_end - date_start). */
const MAX_REPORT_SPAN_MS = 24 * 3600_000;
/** The Reports API's synchronous records (up to 1000 a page; more: `TRUNCATED` with a next link). */
const REPORT_RECORDS = '/v2/reports/records';

/** Sends SMS through the Vonage Messages API: POST $VONAGE_API_URL/v1/messages with basic auth. */
@Injectable()
export class VonageMessageSender implements MessageSender {
  readonly carrier = 'vonage' as const;

  constructor(private readonly config: AppConfig) {}

  private get auth() {
    return { authorization: `Basic ${Buffer.from(`${this.config.VONAGE_API_KEY}:${this.config.VONAGE_API_SECRET}`).toString('base64')}` };
  }

  async send(message: OutboundMessage): Promise<SendResult> {
    const { response, body } = await sendToCarrier(
      `${this.config.vonageApiUrl}/v1/messages`,
      {
        headers: { ...this.auth, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({
          message_type: 'text',
          channel: 'sms',
          // Vonage wants E.164 without the leading `+`.
          from: message.from.replace(/^\+/, ''),
          to: message.to.replace(/^\+/, ''),
          text: message.text,
          // Our id comes back on every status webhook and in the Reports API's records; Vonage has no idempotency key.
          client_ref: message.id,
        }),
      },
      this.config.CARRIER_SEND_TIMEOUT_MS,
    );
    if (response.ok) {
      if (typeof body.message_uuid !== 'string') throw new CarrierUnavailableError('Vonage accepted the message without a message_uuid');
      return { outcome: 'accepted', carrierMessageId: body.message_uuid };
    }
    const problem = sendAnswerProblem('Vonage', response);
    if (problem) throw problem;
    const type = typeof body.type === 'string' ? body.type : '';
    const errorCode = ERROR_CODE.exec(type)?.[1] ?? `http_${response.status}`;
    return { outcome: 'rejected', errorCode, errorDetail: String(body.detail ?? body.title ?? `Vonage answered ${response.status}`), ...vonageFailureReason(errorCode) };
  }

  /**
   * The Reports API's synchronous records (GET /v2/reports/records, product MESSAGES, outbound,
   * date_start..date_end at most 24 h apart): the record whose client_ref is our message id.
   * Vonage documents no other lookup of a Messages API send by a reference of ours; its records may
   * lag the send, which the status webhook (client_ref echoed) usually precedes. Follows the
   * TRUNCATED pages up to LOOKUP_MAX_PAGES.
   */
  async findSent(message: OutboundMessage, since: Date): Promise<FoundSend | undefined> {
    const end = new Date(Date.now() + 60_000);
    const start = new Date(Math.max(since.getTime(), end.getTime() - MAX_REPORT_SPAN_MS));
    const query = new URLSearchParams({
      account_id: this.config.VONAGE_API_KEY,
      product: 'MESSAGES',
      direction: 'outbound',
      date_start: start.toISOString(),
      date_end: end.toISOString(),
    });
    const records = await lookUpPages('Vonage', `${this.config.vonageApiUrl}${REPORT_RECORDS}?${query}`, this.auth, this.config.CARRIER_SEND_TIMEOUT_MS, (body) => ({
      items: Array.isArray(body.records) ? (body.records as Record<string, unknown>[]) : [],
      next: body.request_status === 'TRUNCATED' ? this.nextReportPage(body) : undefined,
    }));
    const ids = records.filter((r) => r.client_ref === message.id && typeof r.message_id === 'string').map((r) => r.message_id as string);
    return ids.length > 0 ? { carrierMessageIds: ids } : undefined;
  }

  /**
   * A TRUNCATED answer's next page: `_links.next.href` (its cursor and iv), which Vonage's
   * pagination guide recommends following, read at our configured API root.
   */
  private nextReportPage(body: Record<string, unknown>): string | undefined {
    const href = ((body._links as Record<string, { href?: unknown } | undefined> | undefined)?.next)?.href;
    if (typeof href !== 'string') return undefined;
    try {
      const next = new URL(href);
      return next.pathname === REPORT_RECORDS ? `${this.config.vonageApiUrl}${next.pathname}${next.search}` : undefined;
    } catch {
      return undefined;
    }
  }
}
