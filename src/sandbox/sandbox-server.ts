import { lookupRoute } from './sandbox-lookups.js';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { E164_PATTERN } from '../telephony/e164.js';
import type { SandboxConfig } from './sandbox-config.js';
import { ChaosSyntaxError } from './chaos.js';
import type { SandboxContext, SandboxRequest } from './sandbox-context.js';
import { SandboxEngine } from './sandbox-engine.js';
import { BodyTooLarge, parseJsonObject, problem, readBody, sendJson } from './sandbox-http.js';
import { sandboxMessage } from './sandbox-message.js';
import { isValidThroughput } from './sender-throughput.js';
import type { SandboxStats } from './sandbox-stats.js';
import { telnyxDevKeyPair } from '../telephony/telnyx-dev-key.js';
import { telnyxInbound } from './telnyx/telnyx-sandbox.js';
import { telnyxSendRoute } from './telnyx/telnyx-send-route.js';
import { isCallControlPath, telnyxCallsRoute } from './telnyx/telnyx-call-routes.js';
import { TelnyxCallControl } from './telnyx/telnyx-call-control.js';
import { isSandboxCallPath, sandboxCallsRoute } from './telnyx/sandbox-call-routes.js';
import { twilioInbound, twilioMessageSid } from './twilio/twilio-sandbox.js';
import { twilioSendRoute } from './twilio/twilio-send-route.js';
import { TwilioVoiceCalls } from './twilio/twilio-voice-call.js';
import { vonageInbound } from './vonage/vonage-sandbox.js';
import { vonageSendRoute } from './vonage/vonage-send-route.js';
import { SandboxNumbers, type NumberStats } from './numbers/sandbox-numbers.js';
import { isTelnyxNumbersPath, telnyxNumbersRoute } from './numbers/telnyx-numbers.js';
import { isTwilioNumbersPath, twilioNumbersRoute } from './numbers/twilio-numbers.js';
import { isVonageNumbersPath, vonageNumbersRoute } from './numbers/vonage-numbers.js';

/** The sandbox will not start: bad chaos syntax, or webhooks would leave this machine. */
export class SandboxRefused extends Error {}

export interface Sandbox {
  /** http://127.0.0.1:<port> */
  url: string;
  stats(): SandboxStats & { numbers: NumberStats };
  close(): Promise<void>;
}

const TWILIO_MESSAGES = /^\/twilio\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/;

/**
 * The carrier sandbox (`node dist/main.js sandbox`): emulates Telnyx POST /v2/messages and
 * Twilio's Messages.json and Vonage's POST /v1/messages, then calls PUBLIC_BASE_URL back with signed webhooks, under chaos.
 * Telnyx Call Control (POST /v2/calls, /v2/calls/{id}/actions/...) is emulated too (telnyx/), and
 * Twilio Voice calls that follow the app's TwiML (twilio/twilio-voice-call.ts).
 * Control: GET /sandbox/stats, POST /sandbox/stats/reset, GET|POST /sandbox/chaos, GET|POST /sandbox/throughput,
 * POST /sandbox/inbound {from,to,text,carrier?}, /sandbox/calls/... (sandbox-call-routes), GET /sandbox/health.
 * Numbers (search, order, release) of the three carriers: numbers/; GET|POST /sandbox/numbers.
 */
export async function startSandbox(config: SandboxConfig, log: (line: string) => void = () => undefined): Promise<Sandbox> {
  const allowRemote = config.SANDBOX_ALLOW_REMOTE === '1';
  let engine: SandboxEngine;
  try {
    engine = new SandboxEngine(config.SANDBOX_CHAOS, allowRemote, log, config.SANDBOX_SEND_RATE_PER_NUMBER, config.SANDBOX_HONOUR_IDEMPOTENCY === '1');
  } catch (err) {
    if (err instanceof ChaosSyntaxError) throw new SandboxRefused(`SANDBOX_CHAOS=${JSON.stringify(config.SANDBOX_CHAOS)}: ${err.message}`);
    throw err;
  }
  const { publicBaseUrl } = config;
  const refused = await engine.urlProblem(publicBaseUrl);
  if (refused) {
    throw new SandboxRefused(
      `PUBLIC_BASE_URL=${publicBaseUrl}: ${refused}. The sandbox sends duplicated, re-signed webhooks on purpose and only to this machine; set SANDBOX_ALLOW_REMOTE=1 to send them elsewhere.`,
    );
  }
  const telnyxPrivateKey = telnyxDevKeyPair(config.SANDBOX_TELNYX_SEED).privateKey;
  const calls = new TelnyxCallControl(engine, telnyxPrivateKey, {
    timeScale: config.SANDBOX_CALL_TIME_SCALE,
    connectionId: config.inboundConnectionId,
    webhookUrl: `${publicBaseUrl}/webhooks/telnyx`,
  });
  const twilioCalls = new TwilioVoiceCalls(engine, calls.behaviours, {
    publicBaseUrl, accountSid: config.TWILIO_ACCOUNT_SID, authToken: config.TWILIO_AUTH_TOKEN, timeScale: () => calls.timeScale,
  });
  const numbers = new SandboxNumbers(config.SANDBOX_NUMBER_FAILURE_PERCENT, config.SANDBOX_NUMBER_LOST_ANSWER_PERCENT, config.SANDBOX_NUMBER_ORDER_DELAY_MS);
  const ctx: SandboxContext = { engine, config, telnyxPrivateKey, calls, twilioCalls, numbers };

  const server = http.createServer((req, res) => {
    handle(ctx, req, res).catch((err) => {
      if (err instanceof BodyTooLarge) return problem(res, 413, err.message);
      log(`sandbox: ${req.method} ${req.url} failed: ${(err as Error).stack ?? err}`);
      problem(res, 500, 'sandbox error');
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.SANDBOX_PORT, allowRemote ? '0.0.0.0' : '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats: () => ({ ...engine.stats, numbers: numbers.stats }),
    async close() {
      await engine.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function handle(ctx: SandboxContext, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const { engine } = ctx;
  const [path, search] = (req.url ?? '/').split('?', 2) as [string, string | undefined];
  const body = req.method === 'POST' ? await readBody(req) : '';
  const route = `${req.method} ${path}`;

  if (route === 'GET /sandbox/health') return sendJson(res, 200, { status: 'ok' });
  if (route === 'GET /sandbox/stats') return sendJson(res, 200, { chaos: engine.chaosSpec, ...engine.stats, numbers: ctx.numbers.stats });
  if (route === 'POST /sandbox/stats/reset') {
    engine.resetStats();
    ctx.numbers.resetStats();
    return sendJson(res, 200, { chaos: engine.chaosSpec, ...engine.stats, numbers: ctx.numbers.stats });
  }
  if (route === 'GET /sandbox/numbers') return sendJson(res, 200, numbersControl(ctx));
  if (route === 'POST /sandbox/numbers') return numbersControlRoute(ctx, res, body);
  if (route === 'GET /sandbox/throughput') return sendJson(res, 200, engine.throughput.describe());
  if (route === 'POST /sandbox/throughput') return throughputRoute(ctx, res, body);
  if (route === 'GET /sandbox/chaos') return sendJson(res, 200, { chaos: engine.chaosSpec });
  if (route === 'POST /sandbox/chaos') {
    const json = parseJsonObject(body);
    if (typeof json?.chaos !== 'string') return problem(res, 400, 'body must be {"chaos":"duplicate=3,resign,..."} ("off" for none)');
    const previous = engine.chaosSpec;
    try {
      engine.setChaos(json.chaos);
    } catch (err) {
      return problem(res, 400, (err as Error).message);
    }
    engine.log(`sandbox chaos: ${engine.chaosSpec} (was ${previous})`);
    return sendJson(res, 200, { chaos: engine.chaosSpec, previous });
  }

  let chaos;
  try {
    chaos = engine.chaosFor(req);
  } catch (err) {
    return problem(res, 400, `x-sandbox-chaos: ${(err as Error).message}`);
  }
  const request: SandboxRequest = { req, res, body, chaos };
  const query = new URLSearchParams(search);
  if (isTelnyxNumbersPath(path)) return telnyxNumbersRoute(ctx, request, path, query);
  if (isTwilioNumbersPath(path)) return twilioNumbersRoute(ctx, request, path, query);
  if (isVonageNumbersPath(path)) return vonageNumbersRoute(ctx, request, path, query);
  if (lookupRoute(ctx, request, path, query)) return;
  if (route === 'POST /v2/messages') return telnyxSendRoute(ctx, request);
  if (route === 'POST /v1/messages') return vonageSendRoute(ctx, request);
  if (isCallControlPath(path)) return telnyxCallsRoute(ctx, request, path);
  if (isSandboxCallPath(path)) return sandboxCallsRoute(ctx, request, path, new URLSearchParams(search));
  const twilio = req.method === 'POST' ? TWILIO_MESSAGES.exec(path) : null;
  if (twilio) return twilioSendRoute(ctx, decodeURIComponent(twilio[1]!), request);
  if (route === 'POST /sandbox/inbound') return inboundRoute(ctx, request);
  return problem(res, 404, `no sandbox route ${route}`);
}

/** The numbers emulation's settings, counters and holdings: GET /sandbox/numbers. */
function numbersControl({ numbers }: SandboxContext) {
  return {
    failure_percent: numbers.failurePercent,
    lost_answer_percent: numbers.lostAnswerPercent,
    stats: numbers.stats,
    held: [...numbers.held.entries()].map(([phone_number, h]) => ({ phone_number, carrier: h.carrier, id: h.id, config: h.config })),
  };
}

/** POST /sandbox/numbers {failure_percent?, lost_answer_percent?}: the chaos of buying numbers, 0 to 100 each. */
function numbersControlRoute(ctx: SandboxContext, res: http.ServerResponse, body: string): void {
  const json = parseJsonObject(body) ?? {};
  const percent = (key: string) => json[key] === undefined || (Number.isInteger(json[key]) && (json[key] as number) >= 0 && (json[key] as number) <= 100);
  if (!percent('failure_percent') || !percent('lost_answer_percent')) return problem(res, 400, 'failure_percent and lost_answer_percent must be whole numbers from 0 to 100');
  if (json.failure_percent !== undefined) ctx.numbers.failurePercent = json.failure_percent as number;
  if (json.lost_answer_percent !== undefined) ctx.numbers.lostAnswerPercent = json.lost_answer_percent as number;
  sendJson(res, 200, numbersControl(ctx));
}

/**
 * POST /sandbox/throughput {"per_number"?: N, "numbers"?: {"+E.164": N | null}}: segments per
 * second a sending number may send before a 429 (0: no limit; null: back to per_number). Every
 * bucket starts full again. 429s are counted in GET /sandbox/stats (sends.throttled, by number).
 */
function throughputRoute({ engine }: SandboxContext, res: http.ServerResponse, body: string): void {
  const json = parseJsonObject(body);
  const numbers = json?.numbers ?? {};
  const invalid = 'body must be {"per_number"?: N, "numbers"?: {"+E.164": N | null}} with N from 0 (no limit) to 100000 segments per second';
  if (!json || (json.per_number !== undefined && !isValidThroughput(json.per_number)) || typeof numbers !== 'object' || numbers === null || Array.isArray(numbers)) return problem(res, 400, invalid);
  const entries = Object.entries(numbers as Record<string, unknown>);
  if (entries.some(([n, v]) => !E164_PATTERN.test(n) || (v !== null && !isValidThroughput(v)))) return problem(res, 400, invalid);
  const { throughput } = engine;
  if (json.per_number !== undefined) throughput.perNumber = json.per_number as number;
  for (const [n, v] of entries) {
    if (v === null) throughput.numbers.delete(n);
    else throughput.numbers.set(n, v as number);
  }
  throughput.reset();
  sendJson(res, 200, throughput.describe());
}

/** POST /sandbox/inbound {from, to, text, carrier?}: a handset texts one of our numbers. */
async function inboundRoute(ctx: SandboxContext, { res, body, chaos }: SandboxRequest): Promise<void> {
  const json = parseJsonObject(body);
  const carrier = json?.carrier ?? 'telnyx';
  const { from, to, text } = json ?? {};
  if (carrier !== 'telnyx' && carrier !== 'twilio' && carrier !== 'vonage') return problem(res, 400, 'carrier must be "telnyx", "twilio" or "vonage"');
  if (typeof from !== 'string' || !E164_PATTERN.test(from)) return problem(res, 400, 'from must be an E.164 number');
  if (typeof to !== 'string' || !E164_PATTERN.test(to)) return problem(res, 400, 'to must be an E.164 number');
  if (typeof text !== 'string') return problem(res, 400, 'text must be a string');
  const { config } = ctx;
  const { publicBaseUrl } = config;
  const message = sandboxMessage(carrier === 'twilio' ? twilioMessageSid() : randomUUID(), from, to, text);
  const webhook = {
    telnyx: () => telnyxInbound(message, `${publicBaseUrl}/webhooks/telnyx`, ctx.telnyxPrivateKey),
    twilio: () => twilioInbound(message, `${publicBaseUrl}/webhooks/twilio/messaging`, config.TWILIO_ACCOUNT_SID, config.TWILIO_AUTH_TOKEN),
    vonage: () => vonageInbound(message, `${publicBaseUrl}/webhooks/vonage/messages`, config.VONAGE_SIGNATURE_SECRET),
  }[carrier]();
  ctx.engine.stats.inbound++;
  const series = ctx.engine.runSeries(chaos, [webhook]);
  // early_receipt here means: answer once the webhooks are delivered (handy for tests).
  if (chaos.earlyReceipt) await series;
  sendJson(res, 202, { data: { id: message.id, carrier, from, to, text, parts: message.parts } });
}
