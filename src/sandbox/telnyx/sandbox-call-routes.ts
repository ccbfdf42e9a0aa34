import { E164_PATTERN } from '../../telephony/e164.js';
import { isValidTimeScale } from '../sandbox-config.js';
import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { decodeSegment, parseJsonObject, problem, sendJson } from '../sandbox-http.js';
import { BehaviourError, parseStep, parseSteps, transcriptLines, type BehaviourStep, type TargetReaction } from './call-behaviour.js';
import { legView } from './call-leg.js';
import { formatCallLog } from './call-log.js';
import { silentMp3, silentWav } from './sandbox-audio.js';
import { parseLostAnswers, type LostAnswer } from './lost-answers.js';
import { COMMAND_ID_WINDOW_MS, TIME_LIMIT_MS } from './telnyx-call-control.js';

/**
 * The sandbox's own control of emulated calls (not Telnyx's API):
 *   POST /sandbox/calls/inbound {from,to,caller_hangup_after_ms?,talk_ms?,transcript?}
 *   POST /sandbox/calls/inbound {from,to,"carrier":"twilio"}   a Twilio Voice call following our TwiML
 *   POST /sandbox/calls/{call_control_id}/hangup       the far end of that leg hangs up
 *   GET  /sandbox/calls[?session=ID], GET /sandbox/calls/{call_control_id}
 *   GET|POST|DELETE /sandbox/calls/behaviours          how dialed numbers react, the time scale
 *   GET  /sandbox/calls/log[?since=ISO]                 the call log, JSON lines
 *   GET  /sandbox/recordings/{id}.wav|.mp3
 */

/** A command_id remembered at most this long (an hour): enough to play any retry schedule. */
const MAX_COMMAND_ID_WINDOW_MS = 3_600_000;
const LEG_PATH = /^\/sandbox\/calls\/([^/]+)(\/hangup)?$/;
const RECORDING_PATH = /^\/sandbox\/recordings\/([0-9a-f-]{36})\.(wav|mp3)$/;

export const isSandboxCallPath = (path: string): boolean => path.startsWith('/sandbox/calls') || path.startsWith('/sandbox/recordings/');

export async function sandboxCallsRoute(ctx: SandboxContext, request: SandboxRequest, path: string, query: URLSearchParams): Promise<void> {
  const { req, res } = request;
  const route = `${req.method} ${path}`;
  if (route === 'POST /sandbox/calls/inbound') return inboundRoute(ctx, request);
  if (path === '/sandbox/calls/behaviours') return behavioursRoute(ctx, request);
  if (route === 'GET /sandbox/calls/log') return logRoute(ctx, request, query);
  if (route === 'GET /sandbox/calls') {
    const session = query.get('session');
    const legs = session === null ? ctx.calls.liveLegs() : ctx.calls.sessionLegs(session);
    if (!legs) return problem(res, 404, `no call session ${session}`);
    return sendJson(res, 200, { data: legs.map(legView) });
  }
  const recording = req.method === 'GET' ? RECORDING_PATH.exec(path) : null;
  if (recording) return recordingRoute(ctx, request, recording[1]!, recording[2] as 'wav' | 'mp3');
  const legPath = LEG_PATH.exec(path);
  const wanted = legPath && ((req.method === 'GET' && !legPath[2]) || (req.method === 'POST' && legPath[2]));
  if (!legPath || !wanted) return problem(res, 404, `no sandbox route ${route}`);
  const leg = ctx.calls.find(decodeSegment(legPath[1]!));
  if (!leg) return problem(res, 404, `no call leg ${legPath[1]}`);
  if (req.method === 'GET') return sendJson(res, 200, { data: legView(leg) });
  const { answer, delivered } = ctx.calls.farEndHangsUp(leg);
  if (request.chaos.earlyReceipt) await delivered;
  return sendJson(res, answer.status, answer.body);
}

function optionalMs(json: Record<string, unknown>, field: string): number | null {
  const value = json[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > TIME_LIMIT_MS) throw new BehaviourError(`${field} must be a whole number of ms from 0 to ${TIME_LIMIT_MS}`);
  return value;
}

async function inboundRoute(ctx: SandboxContext, { res, body, chaos }: SandboxRequest): Promise<void> {
  const json = parseJsonObject(body);
  if (!json) return problem(res, 400, 'body must be {"from","to","caller_hangup_after_ms"?,"talk_ms"?,"transcript"?}');
  const { from, to } = json;
  if (typeof from !== 'string' || !E164_PATTERN.test(from)) return problem(res, 400, 'from must be an E.164 number');
  if (typeof to !== 'string' || !E164_PATTERN.test(to)) return problem(res, 400, 'to must be an E.164 number');
  if (json.carrier !== undefined && json.carrier !== 'telnyx' && json.carrier !== 'twilio') return problem(res, 400, 'carrier must be "telnyx" or "twilio"');
  if (json.carrier === 'twilio') {
    const call = ctx.twilioCalls.inbound(from, to, chaos);
    // early_receipt: answer once the call is over (its status callback sent), handy for tests.
    if (chaos.earlyReceipt) await call.done;
    else await call.firstReply;
    return sendJson(res, 202, { data: { call_sid: call.callSid, from, to, carrier: 'twilio' } });
  }
  let request;
  try {
    request = {
      from, to,
      callerHangupAfterMs: optionalMs(json, 'caller_hangup_after_ms'),
      talkMs: optionalMs(json, 'talk_ms'),
      transcript: json.transcript === undefined ? null : transcriptLines(json.transcript, 'transcript'),
    };
  } catch (err) {
    if (err instanceof BehaviourError) return problem(res, 400, err.message);
    throw err;
  }
  const { leg, delivered } = ctx.calls.inbound(request, chaos);
  // early_receipt here means: answer once call.initiated is delivered (handy for tests).
  if (chaos.earlyReceipt) await delivered;
  sendJson(res, 202, { data: { call_control_id: leg.callControlId, call_leg_id: leg.callLegId, call_session_id: leg.callSessionId, from, to } });
}

/**
 * POST merges: each "+E.164" key gets a behaviour or a script (null removes it), "default" the
 * reaction of every other number, "time_scale" the speed of call time (for timers set from now on),
 * "lose_command_answers" the commands whose answers are lost after they are carried out,
 * "command_id_window_ms" how long a command_id is honoured (Telnyx: 60 s). Nothing changes
 * unless the whole body is valid. DELETE restores the defaults.
 */
async function behavioursRoute(ctx: SandboxContext, { req, res, body }: SandboxRequest): Promise<void> {
  const { calls } = ctx;
  const view = () => ({
    ...calls.behaviours.view(), time_scale: calls.timeScale,
    lose_command_answers: calls.lostAnswers.view(), command_id_window_ms: calls.commandIdWindowMs,
  });
  if (req.method === 'GET') return sendJson(res, 200, view());
  if (req.method === 'DELETE') {
    calls.behaviours.clear();
    calls.lostAnswers.clear();
    calls.timeScale = ctx.config.SANDBOX_CALL_TIME_SCALE;
    calls.commandIdWindowMs = COMMAND_ID_WINDOW_MS;
    return sendJson(res, 200, view());
  }
  if (req.method !== 'POST') return problem(res, 404, `no sandbox route ${req.method} /sandbox/calls/behaviours`);
  const json = parseJsonObject(body);
  if (!json) return problem(res, 400, 'body must be {"+15550002222":{"answer_after_ms":300,"talk_ms":2000},"default":{...},"time_scale":0.01}');
  const numbers = new Map<string, BehaviourStep[] | null>();
  let fallback: TargetReaction | undefined;
  let lostAnswers: Map<string, LostAnswer | null> | undefined;
  try {
    for (const [key, value] of Object.entries(json)) {
      if (key === 'time_scale') {
        if (!isValidTimeScale(value)) throw new BehaviourError('time_scale must be a number from 0.001 to 1000');
      } else if (key === 'lose_command_answers') {
        lostAnswers = parseLostAnswers(value);
      } else if (key === 'command_id_window_ms') {
        if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_COMMAND_ID_WINDOW_MS) throw new BehaviourError(`command_id_window_ms must be a whole number from 0 to ${MAX_COMMAND_ID_WINDOW_MS}`);
      } else if (key === 'default') {
        const step = parseStep(value, 'default');
        if (step.times !== null || step.reaction.kind === 'dial_error') throw new BehaviourError('default takes no times and no dial_error');
        fallback = step.reaction;
      } else if (E164_PATTERN.test(key)) {
        numbers.set(key, value === null ? null : parseSteps(value, key));
      } else {
        throw new BehaviourError(`${key}: keys are E.164 numbers, "default", "time_scale", "lose_command_answers" or "command_id_window_ms"`);
      }
    }
  } catch (err) {
    if (err instanceof BehaviourError) return problem(res, 400, err.message);
    throw err;
  }
  if (typeof json.time_scale === 'number') calls.timeScale = json.time_scale;
  if (typeof json.command_id_window_ms === 'number') calls.commandIdWindowMs = json.command_id_window_ms;
  if (lostAnswers) calls.lostAnswers.apply(lostAnswers);
  if (fallback) calls.behaviours.setDefault(fallback);
  for (const [number, steps] of numbers) {
    if (steps) calls.behaviours.set(number, steps);
    else calls.behaviours.remove(number);
  }
  ctx.engine.log(`sandbox call behaviours: ${JSON.stringify(view())}`);
  sendJson(res, 200, view());
}

async function logRoute(ctx: SandboxContext, { res }: SandboxRequest, query: URLSearchParams): Promise<void> {
  const sinceText = query.get('since');
  const since = sinceText === null ? undefined : new Date(sinceText);
  if (since && Number.isNaN(since.getTime())) return problem(res, 400, 'since must be an ISO 8601 time');
  const lines = [...ctx.calls.log(since), ...ctx.twilioCalls.log(since)].sort((a, b) => a.end_time.localeCompare(b.end_time));
  const text = formatCallLog(lines);
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function recordingRoute(ctx: SandboxContext, { res }: SandboxRequest, id: string, format: 'wav' | 'mp3'): Promise<void> {
  const ms = ctx.calls.media.recordingMs(id);
  if (ms === undefined) return problem(res, 404, `no recording ${id}`);
  const audio = format === 'wav' ? silentWav(ms) : silentMp3(ms);
  res.writeHead(200, { 'content-type': format === 'wav' ? 'audio/wav' : 'audio/mpeg', 'content-length': audio.length });
  res.end(audio);
}
