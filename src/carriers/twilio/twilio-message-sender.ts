import { twilioFailureReason } from './twilio-failure-reasons.js';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import {
  CarrierUnavailableError, lookUpPages, referencedUrl, sendAnswerProblem, sendToCarrier,
  type FoundSend, type MessageSender, type OutboundMessage, type SendResult,
} from '../message-sender.js';

/** Twilio's list answers a page of this many, newest first. */
const LOOKUP_PAGE_SIZE = 50;

/**
 * Sends SMS through Twilio's Messages resource, form-encoded with basic auth. CreateMessage
 * declares no idempotency header (I-Twilio-Idempotency-Token is one Twilio sends on its own
 * webhooks), so none is sent: each message gets its own StatusCallback URL naming it, which
 * Twilio calls (and signs, URL and query included) with every status.
 */
@Injectable()
export class TwilioMessageSender implements MessageSender {
  readonly carrier = 'twilio' as const;

  constructor(private readonly config: AppConfig) {}

  private get account() {
    const sid = this.config.TWILIO_ACCOUNT_SID;
    return {
      url: `${this.config.twilioApiUrl}/2010-04-01/Accounts/${encodeURIComponent(sid)}/Messages.json`,
      auth: { authorization: `Basic ${Buffer.from(`${sid}:${this.config.TWILIO_AUTH_TOKEN}`).toString('base64')}` },
    };
  }

  async send(message: OutboundMessage): Promise<SendResult> {
    const { url, auth } = this.account;
    const form = new URLSearchParams({
      From: message.from,
      To: message.to,
      Body: message.text,
      StatusCallback: referencedUrl(`${this.config.publicBaseUrl}/webhooks/twilio/messaging`, message.id),
    });
    const { response, body } = await sendToCarrier(url, { headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() }, this.config.CARRIER_SEND_TIMEOUT_MS);
    if (response.ok) {
      if (typeof body.sid !== 'string') throw new CarrierUnavailableError('Twilio accepted the message without a sid');
      return { outcome: 'accepted', carrierMessageId: body.sid };
    }
    const problem = sendAnswerProblem('Twilio', response);
    if (problem) throw problem;
    const errorCode = String(body.code ?? `http_${response.status}`);
    return { outcome: 'rejected', errorCode, errorDetail: String(body.message ?? `Twilio answered ${response.status}`), ...twilioFailureReason(errorCode) };
  }

  /**
   * GET Messages.json (ListMessage) filtered by To and From: the outbound messages with our text
   * created since `since`, oldest first, from the pages next_page_uri leads to (up to
   * LOOKUP_MAX_PAGES). A Message resource does not show its StatusCallback, so
   * this cannot tell two messages of the same text to the same handset apart: the caller takes the
   * first one no other message of ours carries. No DateSent filter: a message still queued at
   * Twilio has no date_sent yet, and would be missed.
   */
  async findSent(message: OutboundMessage, since: Date): Promise<FoundSend | undefined> {
    const { url, auth } = this.account;
    const query = new URLSearchParams({ To: message.to, From: message.from, PageSize: String(LOOKUP_PAGE_SIZE) });
    // next_page_uri is a path from the API's root (`/2010-04-01/…`, PageToken included): read at our configured root.
    const listed = await lookUpPages('Twilio', `${url}?${query}`, auth, this.config.CARRIER_SEND_TIMEOUT_MS, (body) => ({
      items: Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [],
      next: typeof body.next_page_uri === 'string' && body.next_page_uri.startsWith('/2010-04-01/') ? `${this.config.twilioApiUrl}${body.next_page_uri}` : undefined,
    }));
    const ours = listed
      .filter((m) => typeof m.sid === 'string' && m.body === message.text && String(m.direction ?? '').startsWith('outbound') && Date.parse(String(m.date_created)) >= since.getTime())
      .sort((a, b) => Date.parse(String(a.date_created)) - Date.parse(String(b.date_created)));
    return ours.length > 0 ? { carrierMessageIds: ours.map((m) => m.sid as string) } : undefined;
  }
}
