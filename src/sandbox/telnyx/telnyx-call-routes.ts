import { E164_PATTERN } from '../../telephony/e164.js';
import { pickSendFault } from '../chaos.js';
import { bump } from '../sandbox-stats.js';
import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { decodeSegment, header, parseJsonObject, sendJson } from '../sandbox-http.js';
import { callResource } from './call-leg.js';
import { isCallAction } from './call-action-names.js';
import { runCallAction } from './telnyx-call-actions.js';
import type { CommandAnswer, CommandResult, DialRequest } from './telnyx-call-control.js';
import { telnyxErrors } from './telnyx-sandbox.js';

/**
 * Telnyx Call Control under the sandbox's /v2: POST /v2/calls (dial), POST
 * /v2/calls/{call_control_id}/actions/{action}, GET /v2/calls/{call_control_id}; bearer
 * TELNYX_API_KEY, JSON, Telnyx error bodies. Chaos `fail_rate` / `reject` hit these requests as
 * they hit sends; `early_receipt` delivers a command's webhooks before its answer.
 */

const ACTION_PATH = /^\/v2\/calls\/([^/]+)\/actions\/([^/]+)$/;
const CALL_PATH = /^\/v2\/calls\/([^/]+)$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DEFAULT_TIMEOUT_SECS = 30;

export const isCallControlPath = (path: string): boolean => path === '/v2/calls' || path.startsWith('/v2/calls/');

const invalid = (code: string, title: string, detail: string, pointer?: string): CommandAnswer => ({ status: 422, body: telnyxErrors(code, title, detail, pointer) });
const missing = (field: string) => invalid('10004', 'Missing required parameter', `\`${field}\` is required.`, `/${field}`);
const badValue = (field: string, detail: string) => invalid('10015', 'Bad Request', detail, `/${field}`);
const notE164 = (field: string) => invalid('10016', 'Phone number must be in +E.164 format', `\`${field}\` must be a +E.164 number.`, `/${field}`);
const notFound = (detail: string): CommandAnswer => ({ status: 404, body: telnyxErrors('10005', 'Resource not found', detail) });

export async function telnyxCallsRoute(ctx: SandboxContext, request: SandboxRequest, path: string): Promise<void> {
  const { req, res } = request;
  const action = req.method === 'POST' ? ACTION_PATH.exec(path) : null;
  if (action) ctx.calls.stats.commands.requests++;
  if (req.method === 'POST' && path === '/v2/calls') ctx.calls.stats.dials.requests++;
  if (header(req, 'authorization') !== `Bearer ${ctx.config.TELNYX_API_KEY}`) {
    countInvalid(ctx, Boolean(action));
    return sendJson(res, 401, telnyxErrors('10009', 'Authentication failed', 'The Bearer API key is missing or is not TELNYX_API_KEY.'));
  }
  if (req.method === 'POST' && path === '/v2/calls') return dialRoute(ctx, request);
  if (action) return actionRoute(ctx, request, decodeSegment(action[1]!), action[2]!);
  const status = req.method === 'GET' ? CALL_PATH.exec(path) : null;
  const leg = status ? ctx.calls.find(decodeSegment(status[1]!)) : undefined;
  if (leg) return sendJson(res, 200, { data: callResource(leg) });
  const missingCall = notFound(status ? 'No call has this call_control_id.' : `The sandbox does not emulate ${req.method} ${path}.`);
  return sendJson(res, missingCall.status, missingCall.body);
}

function countInvalid(ctx: SandboxContext, isCommand: boolean): void {
  if (isCommand) ctx.calls.stats.commands.invalid++;
  else ctx.calls.stats.dials.invalid++;
}

async function dialRoute(ctx: SandboxContext, request: SandboxRequest): Promise<void> {
  const parsed = parseDial(ctx, parseJsonObject(request.body));
  if ('status' in parsed) {
    ctx.calls.stats.dials.invalid++;
    return sendJson(request.res, parsed.status, parsed.body);
  }
  const refused = await ctx.engine.urlProblem(parsed.webhookUrl);
  if (refused) {
    ctx.calls.stats.dials.invalid++;
    const answer = invalid('10003', 'Invalid URL', `The sandbox sends webhooks to loopback only (SANDBOX_ALLOW_REMOTE=1 lifts this): ${refused}.`, '/webhook_url');
    return sendJson(request.res, answer.status, answer.body);
  }
  return answerCommand(ctx, request, 'dial', () => ctx.calls.dial(parsed, request.chaos));
}

/** The dial as Telnyx would validate it, or the 422 it would answer. */
function parseDial(ctx: SandboxContext, json: Record<string, unknown> | undefined): DialRequest | CommandAnswer {
  if (!json) return invalid('10015', 'Bad Request', 'The body must be a JSON object.');
  const { connection_id: connectionId, to, from, timeout_secs: timeoutSecs = DEFAULT_TIMEOUT_SECS, link_to: linkTo, client_state: clientState, command_id: commandId, webhook_url: webhookUrl } = json;
  if (connectionId === undefined || connectionId === '') return missing('connection_id');
  if (typeof connectionId !== 'string') return badValue('connection_id', '`connection_id` must be a string.');
  const expected = ctx.config.TELNYX_CONNECTION_ID;
  if (expected !== undefined && connectionId !== expected) return invalid('10017', 'Associated resource does not exist', '`connection_id` is not a Call Control App of this account.', '/connection_id');
  if (to === undefined || to === '') return missing('to');
  if (typeof to !== 'string') return badValue('to', 'The sandbox dials one destination: `to` must be a string.');
  if (!E164_PATTERN.test(to) && !/^sip:[^@\s]+@[^@\s]+$/.test(to)) return notE164('to');
  if (from === undefined || from === '') return missing('from');
  if (typeof from !== 'string' || !E164_PATTERN.test(from)) return notE164('from');
  if (typeof timeoutSecs !== 'number' || !Number.isInteger(timeoutSecs) || timeoutSecs < 5 || timeoutSecs > 600) {
    return badValue('timeout_secs', '`timeout_secs` must be a whole number from 5 to 600.');
  }
  if (linkTo !== undefined && (typeof linkTo !== 'string' || !ctx.calls.find(linkTo))) {
    return invalid('10017', 'Associated resource does not exist', '`link_to` names no call of this account.', '/link_to');
  }
  if (clientState !== undefined && clientState !== null && (typeof clientState !== 'string' || !BASE64.test(clientState))) {
    return badValue('client_state', '`client_state` must be a valid Base-64 encoded string.');
  }
  if (commandId !== undefined && (typeof commandId !== 'string' || commandId === '')) return badValue('command_id', '`command_id` must be a non-empty string.');
  if (webhookUrl !== undefined && (typeof webhookUrl !== 'string' || !/^https?:\/\/\S+$/.test(webhookUrl))) {
    return invalid('10003', 'Invalid URL', '`webhook_url` must be an absolute http(s) URL.', '/webhook_url');
  }
  return {
    connectionId, to, from, timeoutSecs,
    linkTo: linkTo as string | undefined,
    clientState: (clientState as string | null | undefined) ?? null,
    commandId: commandId as string | undefined,
    webhookUrl: (webhookUrl as string | undefined) ?? `${ctx.config.publicBaseUrl}/webhooks/telnyx`,
  };
}

async function actionRoute(ctx: SandboxContext, request: SandboxRequest, callControlId: string, action: string): Promise<void> {
  const { res } = request;
  const leg = ctx.calls.find(callControlId);
  if (!leg || !isCallAction(action)) {
    if (!leg) ctx.calls.stats.commands.not_found++;
    else ctx.calls.stats.commands.invalid++;
    const answer = notFound(leg ? `The sandbox does not emulate the ${action} command.` : 'No call has this call_control_id.');
    return sendJson(res, answer.status, answer.body);
  }
  const body = request.body.trim() === '' ? {} : parseJsonObject(request.body);
  const problem = actionBodyProblem(body);
  if (problem || !body) {
    ctx.calls.stats.commands.invalid++;
    const answer = problem ?? invalid('10015', 'Bad Request', 'The body must be a JSON object.');
    return sendJson(res, answer.status, answer.body);
  }
  const urlBase = `http://${header(request.req, 'host') ?? '127.0.0.1'}`;
  return answerCommand(ctx, request, action, () => runCallAction(ctx.calls, action, leg, body, urlBase));
}

/** What every command's body must hold (each action checks its own fields). */
function actionBodyProblem(body: Record<string, unknown> | undefined): CommandAnswer | undefined {
  if (!body) return invalid('10015', 'Bad Request', 'The body must be a JSON object.');
  if (body.client_state !== undefined && (typeof body.client_state !== 'string' || !BASE64.test(body.client_state))) {
    return badValue('client_state', '`client_state` must be a valid Base-64 encoded string.');
  }
  if (body.command_id !== undefined && (typeof body.command_id !== 'string' || body.command_id === '')) return badValue('command_id', '`command_id` must be a non-empty string.');
  return undefined;
}

/**
 * Chaos first (a refused or failed request never runs; a `timeout` runs and is never answered),
 * then the command; with `early_receipt` its webhooks are delivered before the answer. A command
 * answered 2xx (carried out, or a replay of one) while `lose_command_answers` names it loses its answer: the
 * connection is closed unanswered, or answered with the configured 5xx.
 */
async function answerCommand(ctx: SandboxContext, { res, chaos }: SandboxRequest, command: string, run: () => CommandResult): Promise<void> {
  const faults = ctx.calls.stats.faults;
  const fault = pickSendFault(chaos);
  if (fault === 'reject') {
    faults.reject++;
    return sendJson(res, 422, telnyxErrors('10015', 'Bad Request', 'The sandbox refused this command (chaos: reject).'));
  }
  if (fault === '500' || fault === '503') {
    faults[fault]++;
    return sendJson(res, Number(fault), telnyxErrors(fault === '503' ? '10011' : '10007', fault === '503' ? 'Service unavailable' : 'Unexpected error', 'Sandbox chaos: fail_rate.'));
  }
  const { answer, delivered } = run();
  if (fault === 'timeout') {
    faults.timeout++;
    return ctx.engine.holdUnanswered(res);
  }
  if (chaos.earlyReceipt) await delivered;
  const lost = answer.status < 300 ? ctx.calls.lostAnswers.take(command) : undefined;
  if (!lost) return sendJson(res, answer.status, answer.body);
  bump(ctx.calls.stats.lost_answers, command);
  if (lost.status === null) return void res.destroy();
  sendJson(res, lost.status, telnyxErrors('10007', 'Unexpected error', 'Sandbox lose_command_answers: the command was carried out, its answer lost.'));
}
