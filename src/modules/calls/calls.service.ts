import { Injectable } from '@nestjs/common';
import { invalidField } from '../../platform/http/validation.js';
import { UnitOfWork } from '../../platform/database/unit-of-work.js';
import { fingerprint, IdempotencyKeys, type StoredResponse } from '../../platform/idempotency/idempotency-keys.js';
import { PhoneNumbers } from '../numbers/phone-numbers.service.js';
import { DEFAULT_TIMEOUT_SECS } from '../sequential-ring/ring-plan.js';
import { CallControlCommands } from './call-control-commands.js';
import { CallFlow } from './call-flow.js';
import { CallTransitions } from './call-transitions.js';
import { toCallView } from './call-view.js';

export interface PlaceCallRequest {
  from: string;
  to: string;
  transcribe?: boolean;
}


/**
 * Outbound calls (`POST /v2/calls`): the call, its one leg, its dial command, the
 * `call.initiated` event and (with an Idempotency-Key) the stored response commit together.
 */
@Injectable()
export class CallsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly numbers: PhoneNumbers,
    private readonly keys: IdempotencyKeys,
    private readonly transitions: CallTransitions,
    private readonly commands: CallControlCommands,
    private readonly flow: CallFlow,
  ) {}

  async place(accountId: string, request: PlaceCallRequest, idempotencyKey?: string): Promise<StoredResponse & { replayed: boolean }> {
    return this.uow.run(async (tx) => {
      if (idempotencyKey) {
        const claim = await this.keys.claim(tx, accountId, idempotencyKey, fingerprint('POST', '/v2/calls', request));
        if (claim.kind === 'replay') return { ...claim.response, replayed: true };
      }
      const number = await this.numbers.findOwned(tx, accountId, request.from);
      if (!number) throw invalidField('/from', `from must be one of your phone numbers; ${request.from} is not`);
      if (number.carrier !== 'telnyx') throw invalidField('/from', `calls are placed through Telnyx Call Control; ${request.from} is a ${number.carrier} number`);
      const call = (await this.transitions.create(tx, {
        accountId, direction: 'outbound', from: request.from, to: request.to, carrier: number.carrier, transcribe: request.transcribe ?? false, status: 'ringing',
      }))!;
      const leg = (await this.transitions.addLeg(tx, call.id, { target: 0, attempt: 1, to: request.to }))!;
      await this.commands.queue(tx, call.id, `${leg.id}-dial`, [this.commands.dial(call, leg, DEFAULT_TIMEOUT_SECS)]);
      await this.flow.announce(tx, call, 'call.initiated');
      const response: StoredResponse = { status: 202, body: { data: toCallView(call, [leg]) } };
      if (idempotencyKey) await this.keys.complete(tx, accountId, idempotencyKey, response);
      return { ...response, replayed: false };
    });
  }
}
