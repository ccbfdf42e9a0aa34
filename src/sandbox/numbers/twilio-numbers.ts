import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, sendJson } from '../sandbox-http.js';

const ACCOUNT = /^\/twilio\/2010-04-01\/Accounts\/([^/]+)(\/.*)$/;

/** The Twilio numbers paths under /twilio/2010-04-01/Accounts/{Sid}: AvailablePhoneNumbers and IncomingPhoneNumbers. */
export function isTwilioNumbersPath(path: string): boolean {
  const rest = ACCOUNT.exec(path)?.[2] ?? '';
  return rest.startsWith('/AvailablePhoneNumbers/') || rest.startsWith('/IncomingPhoneNumbers');
}

const twilioError = (status: number, code: number, message: string) => ({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });

/** An IncomingPhoneNumber resource (api.v2010.account.incoming_phone_number), its configuration in Twilio's snake_case. */
function incomingPhoneNumber(ctx: SandboxContext, phone_number: string, held: { id: string; config: Record<string, string> }) {
  return {
    account_sid: ctx.config.TWILIO_ACCOUNT_SID,
    sid: held.id,
    phone_number,
    friendly_name: phone_number,
    api_version: '2010-04-01',
    capabilities: { voice: true, sms: true, mms: false, fax: false },
    sms_url: held.config.SmsUrl || null,
    sms_method: 'POST',
    voice_url: held.config.VoiceUrl || null,
    voice_method: 'POST',
    status_callback: held.config.StatusCallback || null,
    status_callback_method: 'POST',
    status: 'in-use',
    type: 'local',
    uri: `/2010-04-01/Accounts/${ctx.config.TWILIO_ACCOUNT_SID}/IncomingPhoneNumbers/${held.id}.json`,
  };
}

/**
 * Twilio numbers: GET AvailablePhoneNumbers/{Country}/Local.json, GET|POST IncomingPhoneNumbers.json
 * (form: PhoneNumber, SmsUrl, VoiceUrl, StatusCallback), DELETE IncomingPhoneNumbers/{Sid}.json.
 */
export function twilioNumbersRoute(ctx: SandboxContext, { req, res, body }: SandboxRequest, path: string, query: URLSearchParams): void {
  const numbers = ctx.numbers;
  const [, sid, rest] = ACCOUNT.exec(path)!;
  const auth = Buffer.from(`${ctx.config.TWILIO_ACCOUNT_SID}:${ctx.config.TWILIO_AUTH_TOKEN}`).toString('base64');
  if (decodeURIComponent(sid!) !== ctx.config.TWILIO_ACCOUNT_SID || header(req, 'authorization') !== `Basic ${auth}`) return sendJson(res, 401, twilioError(401, 20003, 'Authenticate'));
  const base = `/2010-04-01/Accounts/${sid}`;
  if (req.method === 'GET' && /^\/AvailablePhoneNumbers\/[A-Z]{2}\/Local\.json$/.test(rest!)) {
    const contains = query.get('Contains');
    const offered = numbers.offer(Number(query.get('PageSize') ?? 50), query.get('AreaCode') ?? undefined, (digits) => !contains || digits.includes(contains));
    return sendJson(res, 200, {
      available_phone_numbers: offered.map((phone_number) => ({
        friendly_name: phone_number, phone_number, region: 'IL', iso_country: 'US', locality: 'Chicago', rate_center: 'CHICAGO', address_requirements: 'none', beta: false,
        capabilities: { voice: true, sms: true, mms: false },
      })),
      uri: `${base}${rest}`,
    });
  }
  if (req.method === 'GET' && rest === '/IncomingPhoneNumbers.json') {
    const wanted = query.get('PhoneNumber');
    const held = numbers.heldBy('twilio', (n) => !wanted || n === wanted);
    const uri = `${base}/IncomingPhoneNumbers.json`;
    return sendJson(res, 200, {
      incoming_phone_numbers: held.map(([phone_number, h]) => incomingPhoneNumber(ctx, phone_number, h)),
      start: 0, end: Math.max(0, held.length - 1), page: 0, page_size: Number(query.get('PageSize') ?? 50), first_page_uri: uri, next_page_uri: null, previous_page_uri: null, uri,
    });
  }
  if (req.method === 'POST' && rest === '/IncomingPhoneNumbers.json') {
    const form = new URLSearchParams(body);
    const phoneNumber = form.get('PhoneNumber') ?? '';
    const config = Object.fromEntries(['SmsUrl', 'VoiceUrl', 'StatusCallback'].map((k) => [k, form.get(k) ?? '']));
    const bought = numbers.buy('twilio', phoneNumber, config);
    if (numbers.loseAnswer()) return void res.socket?.destroy();
    if (!bought) return sendJson(res, 400, twilioError(400, 21422, 'PhoneNumber requested is not available'));
    return sendJson(res, 201, incomingPhoneNumber(ctx, phoneNumber, numbers.held.get(phoneNumber)!));
  }
  const numberSid = /^\/IncomingPhoneNumbers\/([^/]+)\.json$/.exec(rest!)?.[1];
  if (req.method === 'DELETE' && numberSid) {
    if (!numbers.release('twilio', decodeURIComponent(numberSid))) return sendJson(res, 404, twilioError(404, 20404, 'The requested resource was not found'));
    res.writeHead(204);
    return void res.end();
  }
  sendJson(res, 404, twilioError(404, 20404, `no sandbox route ${req.method} ${path}`));
}
