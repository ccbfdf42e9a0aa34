import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, sendJson } from '../sandbox-http.js';

const ACCOUNT = /^\/twilio\/2010-04-01\/Accounts\/([^/]+)(\/.*)$/;

/** The Twilio numbers paths under /twilio/2010-04-01/Accounts/{Sid}: AvailablePhoneNumbers and IncomingPhoneNumbers. */
export function isTwilioNumbersPath(path: string): boolean {
  const rest = ACCOUNT.exec(path)?.[2] ?? '';
  return rest.startsWith('/AvailablePhoneNumbers/') || rest.startsWith('/IncomingPhoneNumbers');
}

const twilioError = (status: number, code: number, message: string) => ({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });

/**
 * Twilio numbers: GET AvailablePhoneNumbers/{Country}/Local.json, GET|POST IncomingPhoneNumbers.json
 * (form: PhoneNumber, SmsUrl, VoiceUrl, StatusCallback), DELETE IncomingPhoneNumbers/{Sid}.json.
 */
export function twilioNumbersRoute(ctx: SandboxContext, { req, res, body }: SandboxRequest, path: string, query: URLSearchParams): void {
  const numbers = ctx.numbers;
  const [, sid, rest] = ACCOUNT.exec(path)!;
  const auth = Buffer.from(`${ctx.config.TWILIO_ACCOUNT_SID}:${ctx.config.TWILIO_AUTH_TOKEN}`).toString('base64');
  if (decodeURIComponent(sid!) !== ctx.config.TWILIO_ACCOUNT_SID || header(req, 'authorization') !== `Basic ${auth}`) return sendJson(res, 401, twilioError(401, 20003, 'Authenticate'));
  if (req.method === 'GET' && /^\/AvailablePhoneNumbers\/[A-Z]{2}\/Local\.json$/.test(rest!)) {
    const offered = numbers.offer(Number(query.get('PageSize') ?? 10), query.get('AreaCode') ?? undefined, query.get('Contains') ?? undefined);
    return sendJson(res, 200, {
      available_phone_numbers: offered.map((phone_number) => ({ friendly_name: phone_number, phone_number, region: 'IL', iso_country: 'US', capabilities: { voice: true, SMS: true, MMS: false } })),
    });
  }
  if (req.method === 'GET' && rest === '/IncomingPhoneNumbers.json') {
    const held = numbers.heldBy('twilio', query.get('PhoneNumber'));
    return sendJson(res, 200, { incoming_phone_numbers: held.map(([phone_number, h]) => ({ sid: h.id, phone_number, ...h.config })) });
  }
  if (req.method === 'POST' && rest === '/IncomingPhoneNumbers.json') {
    const form = new URLSearchParams(body);
    const phoneNumber = form.get('PhoneNumber') ?? '';
    const config = Object.fromEntries(['SmsUrl', 'VoiceUrl', 'StatusCallback'].map((k) => [k, form.get(k) ?? '']));
    const bought = numbers.buy('twilio', phoneNumber, config);
    if (numbers.loseAnswer()) return void res.socket?.destroy();
    if (!bought) return sendJson(res, 400, twilioError(400, 21422, 'PhoneNumber requested is not available'));
    return sendJson(res, 201, { sid: numbers.held.get(phoneNumber)!.id, account_sid: ctx.config.TWILIO_ACCOUNT_SID, phone_number: phoneNumber, ...config });
  }
  const numberSid = /^\/IncomingPhoneNumbers\/([^/]+)\.json$/.exec(rest!)?.[1];
  if (req.method === 'DELETE' && numberSid) {
    if (!numbers.release('twilio', decodeURIComponent(numberSid))) return sendJson(res, 404, twilioError(404, 20404, 'The requested resource was not found'));
    res.writeHead(204);
    return void res.end();
  }
  sendJson(res, 404, twilioError(404, 20404, `no sandbox route ${req.method} ${path}`));
}
