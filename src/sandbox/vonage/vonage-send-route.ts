import { randomUUID } from 'node:crypto';
import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, parseJsonObject, sendJson } from '../sandbox-http.js';
import { sandboxMessage } from '../sandbox-message.js';
import { countSegments } from '../../telephony/segments.js';
import { vonageError, vonageOutboundSeries, vonageSendAnswer } from './vonage-sandbox.js';

/** E.164 as Vonage takes it: digits only, no `+` (a leading `+` is tolerated, as Vonage does). */
const VONAGE_NUMBER = /^\+?[1-9]\d{6,14}$/;
const MAX_CLIENT_REF = 100;

/**
 * POST /v1/messages: basic auth VONAGE_API_KEY:VONAGE_API_SECRET, JSON {message_type:"text",
 * channel:"sms", from, to, text, client_ref?}; status webhooks go to the application's status URL
 * (PUBLIC_BASE_URL/webhooks/vonage/messages), carrying client_ref. Vonage has no idempotency key
 * and does not deduplicate on client_ref: neither does the sandbox (a repeated client_ref is a
 * second message) unless SANDBOX_HONOUR_IDEMPOTENCY=1.
 */
export async function vonageSendRoute(ctx: SandboxContext, { req, res, body, chaos }: SandboxRequest): Promise<void> {
  const sends = ctx.engine.stats.sends;
  sends.requests++;
  const { VONAGE_API_KEY: key, VONAGE_API_SECRET: secret, VONAGE_SIGNATURE_SECRET: signatureSecret } = ctx.config;
  if (header(req, 'authorization') !== `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`) {
    sends.invalid++;
    return sendJson(res, 401, vonageError('#unauthorized', 'Unauthorized', 'You did not provide correct credentials.'));
  }
  const json = parseJsonObject(body);
  const invalid = (name: string, reason: string) => {
    sends.invalid++;
    sendJson(res, 422, { ...vonageError('/messages#1150', 'Invalid params', 'The value of one or more parameters is invalid.'), invalid_parameters: [{ name, reason }] });
  };
  if (!json) return invalid('body', 'must be a JSON object');
  const { message_type: messageType, channel, from, to, text, client_ref: clientRef } = json;
  if (messageType !== 'text') return invalid('message_type', 'the sandbox sends "text" only');
  if (channel !== 'sms') return invalid('channel', 'the sandbox sends "sms" only');
  if (typeof from !== 'string' || !VONAGE_NUMBER.test(from)) return invalid('from', 'must be a number in E.164 format without a leading +');
  if (typeof to !== 'string' || !VONAGE_NUMBER.test(to)) return invalid('to', 'must be a number in E.164 format without a leading +');
  if (typeof text !== 'string' || text.length === 0) return invalid('text', 'must be a non-empty string');
  if (clientRef !== undefined && (typeof clientRef !== 'string' || clientRef.length > MAX_CLIENT_REF)) return invalid('client_ref', `must be a string of at most ${MAX_CLIENT_REF} characters`);

  await ctx.engine.send(res, {
    carrier: 'vonage',
    from: `+${from.replace(/^\+/, '')}`,
    parts: countSegments(text).segments,
    idempotencyKey: clientRef,
    chaos,
    accept: () => {
      const message = sandboxMessage(randomUUID(), `+${from.replace(/^\+/, '')}`, `+${to.replace(/^\+/, '')}`, text, clientRef as string | undefined);
      return {
        answer: { status: 202, body: vonageSendAnswer(message) },
        webhooks: vonageOutboundSeries(message, clientRef, `${ctx.config.publicBaseUrl}/webhooks/vonage/messages`, signatureSecret, ctx.config.SANDBOX_RECEIPT_DELAY_MS, chaos.contradict),
        message,
      };
    },
    rejection: { status: 422, body: { ...vonageError('/messages#1150', 'Invalid params', 'The sandbox refused this message (chaos: reject).'), invalid_parameters: [{ name: 'to', reason: 'sandbox chaos: reject' }] } },
    failure: (status) =>
      status === 429
        ? vonageError('#throttled', 'Rate Limit Hit', 'Please wait, then retry your request.')
        : vonageError(status === 503 ? '#service-unavailable' : '#internal-error', status === 503 ? 'Service Unavailable' : 'Internal Error', 'Sandbox chaos: fail_rate.'),
  });
}
