import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import type { CallCommand, CallCommandResult, CallControl } from '../call-control.js';
import { CarrierUnavailableError, postToCarrier, readJson } from '../message-sender.js';
import { encodeClientState } from './telnyx-client-state.js';

/** Telnyx's error code for an action on a call that has already ended. */
const CALL_ALREADY_ENDED = '90018';

/**
 * Telnyx Call Control v2: `POST /calls` dials, `POST /calls/{call_control_id}/actions/{action}`
 * acts on a leg; bearer TELNYX_API_KEY, `command_id` on every request (Telnyx ignores a
 * command_id it has already seen for that call).
 */
@Injectable()
export class TelnyxCallControl implements CallControl {
  constructor(private readonly config: AppConfig) {}

  /** Telnyx ignores a command_id it has seen on that call for 60 seconds; after that it would act again. */
  readonly commandIdWindowMs = 60_000;

  async send(command: CallCommand): Promise<CallCommandResult> {
    const { path, body } = this.request(command);
    let response: Response;
    let answer: Record<string, unknown>;
    try {
      // A short deadline (CALL_COMMAND_TIMEOUT_MS): a command not answered in time is asked again
      // under the same command_id (the carrier does it once, and a repeat gets the first answer).
      response = await postToCarrier(
        `${this.config.telnyxApiUrl}${path}`,
        { headers: { authorization: `Bearer ${this.config.TELNYX_API_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ ...body, command_id: command.commandId }) },
        this.config.CALL_COMMAND_TIMEOUT_MS,
      );
      answer = await readJson(response);
    } catch (err) {
      if (err instanceof CarrierUnavailableError) return { outcome: 'unanswered', detail: err.message, silent: true };
      // The body cut off by the deadline: not an answer we can act on.
      if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError') return { outcome: 'unanswered', detail: `carrier answer not read in time: ${(err as Error).message}`, silent: true };
      throw err;
    }
    if (response.ok) {
      const controlId = (answer.data as { call_control_id?: unknown } | undefined)?.call_control_id;
      return { outcome: 'done', ...(typeof controlId === 'string' && { controlId }) };
    }
    if (response.status === 429) return { outcome: 'unanswered', detail: `Telnyx answered 429 to ${command.action}`, retryAfterMs: retryAfterMs(response.headers.get('retry-after')) };
    if (response.status === 408 || response.status >= 500) return { outcome: 'unanswered', detail: `Telnyx answered ${response.status} to ${command.action}` };
    const [first] = (answer.errors as { code?: string; title?: string; detail?: string }[] | undefined) ?? [];
    const code = String(first?.code ?? `http_${response.status}`);
    // A hangup of a leg that has already ended has achieved what it wanted.
    if (command.action === 'hangup' && response.status === 422 && code === CALL_ALREADY_ENDED) return { outcome: 'done' };
    return { outcome: 'refused', status: response.status, code, detail: first?.detail ?? first?.title ?? `Telnyx answered ${response.status}` };
  }

  private request(command: CallCommand): { path: string; body: Record<string, unknown> } {
    const onLeg = (controlId: string, action: string) => `/calls/${encodeURIComponent(controlId)}/actions/${action}`;
    switch (command.action) {
      case 'dial':
        return {
          path: '/calls',
          body: {
            connection_id: this.config.TELNYX_CONNECTION_ID,
            to: command.to,
            from: command.from,
            timeout_secs: command.timeoutSecs,
            ...(command.linkTo && { link_to: command.linkTo }),
            client_state: encodeClientState(command.leg),
          },
        };
      case 'bridge':
        return { path: onLeg(command.controlId, 'bridge'), body: { call_control_id: command.otherControlId } };
      case 'record_start':
        // Telnyx requires both; one channel is what a voicemail needs.
        return { path: onLeg(command.controlId, 'record_start'), body: { format: 'mp3', channels: 'single' } };
      default:
        return { path: onLeg(command.controlId, command.action), body: {} };
    }
  }
}

/** Retry-After in seconds (Telnyx sends seconds); 1 s when absent or unreadable. */
function retryAfterMs(value: string | null): number {
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 3600) * 1000 : 1000;
}
