import { randomUUID } from 'node:crypto';
import { E164_PATTERN } from '../../telephony/e164.js';
import { countSegments } from '../../telephony/segments.js';
import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, idempotencyKey, parseJsonObject, sendJson } from '../sandbox-http.js';
import { sandboxMessage } from '../sandbox-message.js';
import { telnyxErrors, telnyxOutboundSeries, telnyxSendAnswer } from './telnyx-sandbox.js';

/** POST /v2/messages: bearer TELNYX_API_KEY, JSON {from, to, text, webhook_url?}; Idempotency-Key ignored (SendMessage declares none) unless SANDBOX_HONOUR_IDEMPOTENCY=1. */
export async function telnyxSendRoute(ctx: SandboxContext, { req, res, body, chaos }: SandboxRequest): Promise<void> {
  const sends = ctx.engine.stats.sends;
  sends.requests++;
  if (header(req, 'authorization') !== `Bearer ${ctx.config.TELNYX_API_KEY}`) {
    sends.invalid++;
    return sendJson(res, 401, telnyxErrors('10009', 'Authentication failed', 'The Bearer API key is missing or is not TELNYX_API_KEY.'));
  }
  const json = parseJsonObject(body);
  const invalid = (pointer: string, detail: string) => {
    sends.invalid++;
    sendJson(res, 422, telnyxErrors('10015', 'Invalid value', detail, pointer));
  };
  if (!json) return invalid('/', 'The body must be a JSON object.');
  const { from, to, text } = json;
  if (typeof from !== 'string' || !E164_PATTERN.test(from)) return invalid('/from', '`from` must be an E.164 number.');
  if (typeof to !== 'string' || !E164_PATTERN.test(to)) return invalid('/to', '`to` must be an E.164 number.');
  if (typeof text !== 'string' || text.length === 0) return invalid('/text', '`text` must be a non-empty string.');
  const webhookUrl = typeof json.webhook_url === 'string' ? json.webhook_url : `${ctx.config.publicBaseUrl}/webhooks/telnyx`;
  const refused = await ctx.engine.urlProblem(webhookUrl);
  if (refused) return invalid('/webhook_url', `The sandbox sends webhooks to loopback only (SANDBOX_ALLOW_REMOTE=1 lifts this): ${refused}.`);

  await ctx.engine.send(res, {
    carrier: 'telnyx',
    from,
    parts: countSegments(text).segments,
    idempotencyKey: idempotencyKey(req),
    chaos,
    accept: () => {
      const message = sandboxMessage(randomUUID(), from, to, text, webhookUrl);
      return {
        answer: { status: 200, body: telnyxSendAnswer(message, webhookUrl) },
        webhooks: telnyxOutboundSeries(message, webhookUrl, ctx.telnyxPrivateKey, ctx.config.SANDBOX_RECEIPT_DELAY_MS, chaos.contradict),
        message,
      };
    },
    rejection: { status: 422, body: telnyxErrors('40310', 'Invalid destination number', 'The sandbox refused this message (chaos: reject).', '/to') },
    failure: (status) =>
      status === 429
        ? telnyxErrors('10010', 'Too many requests', `${from} is sending faster than its throughput; try again after Retry-After.`)
        : telnyxErrors(status === 503 ? '10011' : '10007', status === 503 ? 'Service unavailable' : 'Unexpected error', 'Sandbox chaos: fail_rate.'),
  });
}
