import { E164_PATTERN } from '../../telephony/e164.js';
import { countSegments } from '../../telephony/segments.js';
import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, idempotencyKey, sendJson } from '../sandbox-http.js';
import { sandboxMessage } from '../sandbox-message.js';
import { twilioError, twilioMessageSid, twilioOutboundSeries, twilioSendAnswer } from './twilio-sandbox.js';

/**
 * POST /twilio/2010-04-01/Accounts/:sid/Messages.json: basic auth TWILIO_ACCOUNT_SID:TWILIO_AUTH_TOKEN,
 * form From, To, Body, StatusCallback? (no callbacks without it, as at Twilio); idempotency headers
 * ignored (CreateMessage declares none) unless SANDBOX_HONOUR_IDEMPOTENCY=1.
 */
export async function twilioSendRoute(ctx: SandboxContext, accountSid: string, { req, res, body, chaos }: SandboxRequest): Promise<void> {
  const sends = ctx.engine.stats.sends;
  sends.requests++;
  const { TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: token } = ctx.config;
  const expected = `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}`;
  if (header(req, 'authorization') !== expected || accountSid !== sid) {
    sends.invalid++;
    return sendJson(res, 401, twilioError(401, 20003, 'Authenticate'));
  }
  const form = new URLSearchParams(body);
  const [from, to, text, statusCallback] = ['From', 'To', 'Body', 'StatusCallback'].map((name) => form.get(name) ?? undefined);
  const invalid = (code: number, message: string) => {
    sends.invalid++;
    sendJson(res, 400, twilioError(400, code, message));
  };
  if (!from || !E164_PATTERN.test(from)) return invalid(21212, "The 'From' number is not a valid phone number.");
  if (!to || !E164_PATTERN.test(to)) return invalid(21211, "The 'To' number is not a valid phone number.");
  if (!text) return invalid(21602, 'Message body is required.');
  if (statusCallback) {
    const refused = await ctx.engine.urlProblem(statusCallback);
    if (refused) return invalid(21609, `Invalid StatusCallback: the sandbox calls loopback only (SANDBOX_ALLOW_REMOTE=1 lifts this): ${refused}.`);
  }

  await ctx.engine.send(res, {
    carrier: 'twilio',
    from,
    parts: countSegments(text).segments,
    idempotencyKey: idempotencyKey(req),
    chaos,
    accept: () => {
      const message = sandboxMessage(twilioMessageSid(), from, to, text, statusCallback);
      return {
        answer: { status: 201, body: twilioSendAnswer(message, sid) },
        webhooks: statusCallback ? twilioOutboundSeries(message, statusCallback, sid, token, ctx.config.SANDBOX_RECEIPT_DELAY_MS, chaos.contradict) : [],
        message,
      };
    },
    rejection: { status: 400, body: twilioError(400, 21211, "The 'To' number is not a valid phone number (sandbox chaos: reject).") },
    failure: (status) =>
      status === 429 ? twilioError(429, 20429, 'Too Many Requests') : twilioError(status, status === 503 ? 20503 : 20500, status === 503 ? 'Service Unavailable' : 'Internal Server Error'),
  });
}
