import { randomUUID } from 'node:crypto';
import { expect } from '@jest/globals';
import { ApiClient } from './api-client.js';
import { startTestApp, type TestApp } from './app.js';
import { telnyxEvent, telnyxSigner, type TelnyxSigner } from './carrier-signing.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { FakeCallControl, type ReceivedCommand } from './fake-call-control.js';
import { AfterCommitJobs } from '../../src/platform/outbox/after-commit-jobs.js';
import { waitFor } from './wait.js';

/** An inbound call as the test (playing Telnyx) started it. */
export interface TestCall {
  session: string;
  /** The caller's leg: call_control_id. */
  caller: string;
  from: string;
  to: string;
}

/**
 * The voice pipeline of one test file: the app (HTTP, relay, worker) on its own database, a fake
 * Telnyx Call Control API it sends commands to, a Telnyx key it verifies webhooks with, and a
 * customer owning numbers. The test plays Telnyx: it sends signed call events and reads commands.
 */
export class VoicePipeline {
  private constructor(
    readonly db: TestDatabase,
    readonly app: TestApp,
    readonly telnyx: FakeCallControl,
    readonly signer: TelnyxSigner,
    readonly customer: ApiClient,
  ) {}

  /** `relay: false`: no relay runs, so only jobs run after their commit (AfterCommitJobs) ever run. */
  static async start(env: Record<string, string> = {}, { relay = true } = {}): Promise<VoicePipeline> {
    const db = await createTestDatabase();
    const telnyx = await new FakeCallControl().start();
    const signer = telnyxSigner();
    const app = await startTestApp({
      databaseUrl: db.url,
      relay,
      worker: true,
      env: { ...telnyx.env(), TELNYX_PUBLIC_KEY: signer.publicKey, CARRIER_EVENT_RETRY_BASE_MS: '100', CALL_TRANSCRIPT_SETTLE_MS: '200', ...env },
    });
    const customer = await ApiClient.forNewAccount(app);
    return new VoicePipeline(db, app, telnyx, signer, customer);
  }

  /** A Telnyx number of the customer's with these voice settings (undefined: calls off). */
  async number(phoneNumber: string, voice?: object): Promise<string> {
    return (await this.customer.assignNumber(phoneNumber, 'telnyx', voice)).id;
  }

  /** Delivers one signed Telnyx event; its HTTP status. */
  async deliver(body: string): Promise<number> {
    const res = await fetch(`${this.app.url}/webhooks/telnyx`, { method: 'POST', headers: this.signer.headers(body), body });
    return res.status;
  }

  /** Telnyx tells us a call to `to` is ringing on our connection. */
  async incoming(from: string, to: string, eventId?: string): Promise<TestCall> {
    const call = { session: randomUUID(), caller: `v3:caller-${randomUUID()}`, from, to };
    this.telnyx.sessionFor = () => call.session;
    expect(await this.callerEvent(call, 'call.initiated', { direction: 'incoming', state: 'parked' }, { id: eventId })).toBe(200);
    return call;
  }

  /** An event of the caller's leg (no client_state), as Telnyx sends it. */
  callerEvent(call: TestCall, type: string, extra: Record<string, unknown> = {}, options: { id?: string; occurredAt?: string } = {}): Promise<number> {
    return this.deliver(
      telnyxEvent(type, { call_control_id: call.caller, call_leg_id: randomUUID(), call_session_id: call.session, connection_id: 'conn', client_state: null, from: call.from, to: call.to, ...extra }, options),
    );
  }

  /** An event of a leg we dialed: its call_control_id and our client_state echoed, in the caller's session. */
  legEvent(call: TestCall | { session: string }, dial: ReceivedCommand, type: string, extra: Record<string, unknown> = {}, options: { id?: string; occurredAt?: string } = {}): Promise<number> {
    return this.deliver(
      telnyxEvent(type, {
        call_control_id: dial.controlId, call_leg_id: randomUUID(), call_session_id: call.session, connection_id: 'conn',
        client_state: dial.body.client_state, from: dial.body.from, to: dial.body.to, direction: 'outgoing', ...extra,
      }, options),
    );
  }

  /**
   * The first dial of target `target` (its client_state's index) for this call, once it arrived: a
   * dial resent under its command_id (its answer later than CALL_COMMAND_TIMEOUT_MS on a loaded
   * machine) is the same leg, so counting dials would name it as the next target's.
   */
  dialOfTarget(callId: string, target: number): Promise<ReceivedCommand> {
    return this.telnyx.next((c) => c.action === 'dial' && c.clientState?.call_id === callId && c.clientState?.target === target);
  }

  /** The `n`th dial (1-based) the app sent for this call session's call, once it arrived. */
  dial(callId: string, n = 1): Promise<ReceivedCommand> {
    return this.telnyx.next((c) => c.action === 'dial' && c.clientState?.call_id === callId, n);
  }

  /** Our call id for a Telnyx session, once the call is recorded. */
  async callId(call: TestCall): Promise<string> {
    const row = await waitFor(async () => (await this.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier_call_id = $1`, [call.session])).rows[0], Boolean, { what: `a call for session ${call.session}` });
    return row.id;
  }

  async call(callId: string): Promise<any> {
    return (await this.customer.get(`/v2/calls/${callId}`)).body.data;
  }

  /** Waits until the call (REST view) satisfies `accept`. */
  async callUntil(callId: string, accept: (call: any) => boolean, what: string): Promise<any> {
    return waitFor(() => this.call(callId), accept, { what });
  }

  /** Customer events of a type about this call. */
  events(type: string, callId: string): Promise<number> {
    return this.db.count(`SELECT count(*) FROM outbound_events WHERE type = $1 AND payload->>'id' = $2`, [type, callId]);
  }

  usageRows(callId: string): Promise<number> {
    return this.db.count(`SELECT count(*) FROM usage_records WHERE kind = 'call_minutes' AND resource_id = $1`, [callId]);
  }

  /**
   * Every carrier event stored so far has been processed (or failed / waits for a handler), every
   * due job has finished, and so has every job run after its commit (whose row is not due yet).
   */
  async settled(): Promise<void> {
    const afterCommit = this.app.app.get(AfterCommitJobs);
    await waitFor(
      async () =>
        (await this.db.count(`SELECT count(*) FROM carrier_events WHERE processed_at IS NULL AND error IS NULL AND unhandled_since IS NULL`)) +
        (await this.db.count(`SELECT count(*) FROM outbox_jobs WHERE completed_at IS NULL AND failed_at IS NULL AND run_at <= now()`)) +
        afterCommit.held,
      (n) => n === 0,
      { what: 'every carrier event processed, every due job and every after-commit job finished' },
    );
  }

  async stop(): Promise<void> {
    await this.app.close();
    try {
      await this.telnyx.stop();
    } finally {
      await this.db.drop();
    }
  }
}
