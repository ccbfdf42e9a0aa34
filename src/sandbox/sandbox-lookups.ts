import type { SandboxContext, SandboxRequest } from './sandbox-context.js';
import { header, sendJson } from './sandbox-http.js';
import type { SentMessage } from './sandbox-engine.js';
import { telnyxErrors } from './telnyx/telnyx-sandbox.js';
import { twilioError } from './twilio/twilio-sandbox.js';
import { vonageError } from './vonage/vonage-sandbox.js';

const TWILIO_MESSAGES = /^\/twilio\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/;
/** A page of lookups answers at most this many. */
const PAGE = 50;

/**
 * The lookups a sender uses when a send's answer was lost, answered from the messages the sandbox
 * took (SandboxEngine.sent), newest first: Telnyx GET /v2/detail_records (record_type messaging,
 * filter[cli], filter[cld], filter[created_at][gte]; each record's delivery_status_webhook_url is
 * the message's webhook_url), Twilio GET Messages.json (To, From), Vonage GET /v2/reports/records
 * (product MESSAGES, outbound, date_start/date_end; each record's client_ref). False for any other path.
 */
export function lookupRoute(ctx: SandboxContext, { req, res }: SandboxRequest, path: string, query: URLSearchParams): boolean {
  if (req.method !== 'GET') return false;
  const taken = (carrier: SentMessage['carrier']) => ctx.engine.sent.filter((s) => s.carrier === carrier).map((s) => s.message).reverse();
  const { config } = ctx;
  if (path === '/v2/detail_records') {
    if (header(req, 'authorization') !== `Bearer ${config.TELNYX_API_KEY}`) return reply(res, 401, telnyxErrors('10009', 'Authentication failed', 'The Bearer API key is missing or is not TELNYX_API_KEY.'));
    if (query.get('filter[record_type]') !== 'messaging') return reply(res, 400, telnyxErrors('10015', 'Invalid value', 'The sandbox answers filter[record_type]=messaging only.', '/filter/record_type'));
    const since = Date.parse(query.get('filter[created_at][gte]') ?? '') || 0;
    const data = taken('telnyx')
      .filter((m) => matches(m.from, query.get('filter[cli]')) && matches(m.to, query.get('filter[cld]')) && m.createdAt.getTime() >= since)
      .slice(0, PAGE)
      .map((m) => ({
        record_type: 'message_detail_record', uuid: m.id, cli: m.from, cld: m.to, direction: 'outbound', message_type: 'SMS', parts: m.parts,
        created_at: m.createdAt.toISOString(), delivery_status_webhook_url: m.reference, status: 'delivered',
      }));
    return reply(res, 200, { data, meta: { page_number: 1, page_size: PAGE, total_pages: 1, total_results: data.length } });
  }
  const twilio = TWILIO_MESSAGES.exec(path);
  if (twilio) {
    const expected = `Basic ${Buffer.from(`${config.TWILIO_ACCOUNT_SID}:${config.TWILIO_AUTH_TOKEN}`).toString('base64')}`;
    if (header(req, 'authorization') !== expected || decodeURIComponent(twilio[1]!) !== config.TWILIO_ACCOUNT_SID) return reply(res, 401, twilioError(401, 20003, 'Authenticate'));
    const messages = taken('twilio')
      .filter((m) => matches(m.to, query.get('To')) && matches(m.from, query.get('From')))
      .slice(0, PAGE)
      .map((m) => ({
        sid: m.id, account_sid: config.TWILIO_ACCOUNT_SID, body: m.text, from: m.from, to: m.to, direction: 'outbound-api', status: 'delivered', num_segments: String(m.parts),
        date_created: m.createdAt.toUTCString(), date_sent: m.createdAt.toUTCString(), date_updated: m.createdAt.toUTCString(), api_version: '2010-04-01',
      }));
    return reply(res, 200, { messages, page: 0, page_size: PAGE, start: 0, end: Math.max(0, messages.length - 1), uri: path, first_page_uri: path, next_page_uri: null, previous_page_uri: null });
  }
  if (path === '/v2/reports/records') {
    if (header(req, 'authorization') !== `Basic ${Buffer.from(`${config.VONAGE_API_KEY}:${config.VONAGE_API_SECRET}`).toString('base64')}`) {
      return reply(res, 401, vonageError('#unauthorized', 'Unauthorized', 'You did not provide correct credentials.'));
    }
    const [start, end] = [Date.parse(query.get('date_start') ?? ''), Date.parse(query.get('date_end') ?? '')];
    if (query.get('product') !== 'MESSAGES' || query.get('direction') !== 'outbound' || Number.isNaN(start) || Number.isNaN(end)) {
      return reply(res, 400, vonageError('#invalid-parameters', 'Invalid parameters', 'The sandbox answers product=MESSAGES, direction=outbound, date_start and date_end.'));
    }
    const records = taken('vonage')
      .filter((m) => m.createdAt.getTime() >= start && m.createdAt.getTime() < end)
      .map((m) => ({
        account_id: config.VONAGE_API_KEY, message_id: m.id, client_ref: m.reference, direction: 'outbound', from: m.from.replace(/^\+/, ''), to: m.to.replace(/^\+/, ''),
        date_received: m.createdAt.toISOString(), status: 'delivered', provider: 'sms',
      }));
    return reply(res, 200, { request_status: 'SUCCESS', product: 'MESSAGES', direction: 'outbound', items_count: records.length, records });
  }
  return false;
}

function matches(value: string, wanted: string | null): boolean {
  return wanted === null || wanted === '' || value === wanted;
}

function reply(res: SandboxRequest['res'], status: number, body: unknown): true {
  sendJson(res, status, body);
  return true;
}
