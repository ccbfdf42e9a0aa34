import { bump } from '../sandbox-stats.js';
import type { CallAction } from './call-action-names.js';
import { isAlive, isAnswered, type CallLeg } from './call-leg.js';
import { ourHangup } from './call-hangups.js';
import { callHasEnded, type CommandAnswer, type CommandResult, type TelnyxCallControl } from './telnyx-call-control.js';
import { telnyxErrors } from './telnyx-sandbox.js';

interface ActionCall {
  control: TelnyxCallControl;
  leg: CallLeg;
  body: Record<string, unknown>;
  /** http://<sandbox>, for recording URLs. */
  urlBase: string;
}

const OK: CommandAnswer = { status: 200, body: { data: { result: 'ok' } } };
const refused = (detail: string, pointer?: string): CommandAnswer => ({ status: 422, body: telnyxErrors('10015', 'Bad Request', detail, pointer) });
const missing = (field: string): CommandAnswer => ({ status: 422, body: telnyxErrors('10004', 'Missing required parameter', `\`${field}\` is required.`, `/${field}`) });
const notAnswered = () => refused('The call has not been answered yet.');

const ACTIONS: Record<CallAction, (call: ActionCall) => CommandAnswer> = {
  answer({ control, leg }) {
    if (leg.direction !== 'incoming') return refused('Only an incoming call can be answered.');
    if (isAnswered(leg)) return refused('The call has already been answered.');
    control.markAnswered(leg, leg.talkMs);
    return OK;
  },

  bridge({ control, leg, body }) {
    const otherId = body.call_control_id;
    if (typeof otherId !== 'string' || otherId === '') return missing('call_control_id');
    const other = control.find(otherId);
    if (!other) return { status: 422, body: telnyxErrors('10017', 'Associated resource does not exist', 'No call has this call_control_id.', '/call_control_id') };
    if (other === leg) return refused('A call cannot be bridged with itself.', '/call_control_id');
    if (!isAlive(other)) return callHasEnded();
    if (!isAnswered(leg) || !isAnswered(other)) return refused('Both calls must be answered before they are bridged.', '/call_control_id');
    if (leg.bridgedWith !== undefined || other.bridgedWith !== undefined) return refused('One of the calls is already bridged.', '/call_control_id');
    control.bridge(leg, other);
    return OK;
  },

  hangup({ control, leg }) {
    control.endLeg(leg, ourHangup({ direction: leg.direction, answered: isAnswered(leg) }));
    return OK;
  },

  record_start({ control, leg, body, urlBase }) {
    if (body.format === undefined) return missing('format');
    if (body.format !== 'wav' && body.format !== 'mp3') return refused('`format` must be "wav" or "mp3".', '/format');
    if (body.channels === undefined) return missing('channels');
    if (body.channels !== 'single' && body.channels !== 'dual') return refused('`channels` must be "single" or "dual".', '/channels');
    const maxLength = body.max_length ?? 0;
    if (typeof maxLength !== 'number' || !Number.isInteger(maxLength) || maxLength < 0 || maxLength > 14_400) return refused('`max_length` must be a whole number of seconds from 0 to 14400.', '/max_length');
    if (!isAnswered(leg)) return notAnswered();
    if (leg.recording) return refused('The call is already being recorded.');
    control.media.startRecording(leg, body.channels, maxLength * 1000, urlBase);
    return OK;
  },

  transcription_start({ control, leg }) {
    if (!isAnswered(leg)) return notAnswered();
    if (leg.transcribing) return refused('The call is already being transcribed.');
    control.media.startTranscription(leg);
    return OK;
  },
};

/**
 * Runs one command on a leg, once per (call_control_id, command_id). A `client_state` in the
 * body replaces the leg's from this command on (its own events carry it), unless it is refused.
 */
export function runCallAction(control: TelnyxCallControl, action: CallAction, leg: CallLeg, body: Record<string, unknown>, urlBase: string): CommandResult {
  const commandId = typeof body.command_id === 'string' ? body.command_id : undefined;
  const commands = control.stats.commands;
  return control.once(commandId === undefined ? undefined : `${leg.callControlId}:${commandId}`, () => commands.replayed++, () => {
    if (!isAlive(leg)) {
      commands.ended++;
      return callHasEnded();
    }
    const previousState = leg.clientState;
    if (typeof body.client_state === 'string') leg.clientState = body.client_state;
    const answer = ACTIONS[action]({ control, leg, body, urlBase });
    if (answer.status === 200) {
      bump(commands.by_action, action);
    } else {
      leg.clientState = previousState;
      if (answer.status === 422 && (answer.body as { errors: { code: string }[] }).errors[0]?.code === '90018') commands.ended++;
      else commands.invalid++;
    }
    return answer;
  });
}
