import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Telnyx from 'telnyx';
import { DEV_TELNYX_API_KEY } from '../../src/telephony/dev-credentials.js';
import { CallSandbox, clientState, freshNumber, type CallEvent } from '../support/call-sandbox.js';
import { carrierFixture } from '../support/carrier-signing.js';
import { waitFor } from '../support/wait.js';

/**
 * The sandbox's Telnyx Call Control API as a client (our app) sees it: dials and commands over
 * real HTTP, call events back to a local receiver. Call time runs 100 times faster
 * (SANDBOX_CALL_TIME_SCALE=0.01): timeout_secs 20 rings 200 ms, answer_after_ms 5000 is 50 ms.
 */
describe('the sandbox emulating Telnyx Call Control', () => {
  let s: CallSandbox;
  const types = (events: CallEvent[]) => events.map((e) => e.event_type);
  const fixtureKeys = (name: string) => Object.keys(JSON.parse(carrierFixture(`telnyx/${name}.json`)).data.payload).sort();

  beforeAll(async () => {
    s = await CallSandbox.start({ SANDBOX_CALL_TIME_SCALE: '0.01' });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('an inbound call, then a dial linked to it: signed events with each leg\'s client_state, one call_session_id, fixture shapes', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { answer_after_ms: 5000, talk_ms: 10_000 } });
    const caller = await s.inbound({ to: '+15550001111' });
    const state = clientState({ call_id: 'call_1', target: 0 });
    const dialed = await s.dial({ to: target, link_to: caller.call_control_id, client_state: state, command_id: 'dial-seq-1' });
    expect(dialed.status).toBe(200);
    expect(dialed.body.data).toMatchObject({ record_type: 'call', is_alive: true, call_session_id: caller.call_session_id, client_state: state });
    const leg = dialed.body.data.call_control_id as string;
    expect(leg).toMatch(/^v3:[A-Za-z0-9_-]+$/);

    const legEvents = await s.waitForEvents({ leg }, ['call.hangup']);
    expect(types(legEvents)).toEqual(['call.initiated', 'call.answered', 'call.hangup']);
    const [initiated, answered, hangup] = legEvents as [CallEvent, CallEvent, CallEvent];
    expect(initiated.payload).toMatchObject({ direction: 'outgoing', state: 'bridging', to: target, from: '+15550001111', client_state: state, connection_id: 'conn-test', call_session_id: caller.call_session_id });
    expect(answered.payload).toMatchObject({ direction: 'outgoing', state: 'answered', client_state: state });
    expect(hangup.payload).toMatchObject({ state: 'hangup', hangup_cause: 'normal_clearing', hangup_source: 'callee', sip_hangup_cause: '200', client_state: state });
    // occurred_at is the sandbox's clock when each thing happened: in order, and not the send time.
    expect(legEvents.map((e) => e.occurred_at)).toEqual(legEvents.map((e) => e.occurred_at).sort());
    expect(new Date(answered.occurred_at).getTime() - new Date(initiated.occurred_at).getTime()).toBeGreaterThanOrEqual(40);

    const [callerInitiated] = s.events({ leg: caller.call_control_id });
    expect(callerInitiated!.payload).toMatchObject({ direction: 'incoming', state: 'parked', to: '+15550001111', from: '+13125550001' });
    // Telnyx specifies client_state as a string: the caller's leg has none, so it is left out, never null.
    expect(callerInitiated!.payload).not.toHaveProperty('client_state');
    for (const event of [...legEvents, callerInitiated!]) {
      await s.expectSigned(event);
      expect(event).toMatchObject({ attempt: 1, id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      expect(Object.keys(JSON.parse(event.request.body).data).sort()).toEqual(['event_type', 'id', 'occurred_at', 'payload', 'record_type']);
    }
    expect(Object.keys(initiated.payload).sort()).toEqual(fixtureKeys('call.initiated'));
    expect(Object.keys(answered.payload).sort()).toEqual(fixtureKeys('call.answered'));
    expect(Object.keys(hangup.payload).sort()).toEqual(fixtureKeys('call.hangup'));

    const status = await s.request('GET', `/v2/calls/${encodeURIComponent(leg)}`);
    expect(status.body.data).toMatchObject({ call_control_id: leg, is_alive: false, call_duration: 0 });
  });

  it('the same command_id: the same call and nothing dialed again; the same command twice: the same answer, one effect', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { no_answer: true } });
    const before = (await s.stats()).calls;
    const first = await s.dial({ to: target, command_id: 'dial-once', timeout_secs: 600 });
    const again = await s.dial({ to: target, command_id: 'dial-once', timeout_secs: 60 });
    expect(again).toEqual(first);
    const leg = first.body.data.call_control_id as string;

    const hangups = await Promise.all([1, 2, 3].map(() => s.action(leg, 'hangup', { command_id: 'hangup-1' })));
    expect(hangups.map((h) => h.body)).toEqual([1, 2, 3].map(() => ({ data: { result: 'ok' } })));
    const ended = await s.action(leg, 'hangup', { command_id: 'hangup-2' });
    expect(ended.status).toBe(422);
    expect(ended.body.errors[0]).toMatchObject({ code: '90018', title: 'Call has already ended' });
    expect((await s.action(leg, 'hangup', { command_id: 'hangup-2' })).body).toEqual(ended.body);
    expect((await s.action(leg, 'answer', {})).status).toBe(422);

    await s.idle();
    expect(types(s.events({ leg }))).toEqual(['call.initiated', 'call.hangup']);
    expect(s.events({ leg, type: 'call.hangup' })[0]!.payload).toMatchObject({ hangup_cause: 'originator_cancel', hangup_source: 'caller', sip_hangup_cause: '487' });
    const after = (await s.stats()).calls;
    expect(after.dials.accepted - before.dials.accepted).toBe(1);
    expect(after.dials.replayed - before.dials.replayed).toBe(1);
    expect(after.dials.to[target]).toBe(1);
    expect(after.commands.replayed - before.commands.replayed).toBe(3);
    expect(after.commands.ended - before.commands.ended).toBe(2);
    expect((after.commands.by_action.hangup ?? 0) - (before.commands.by_action.hangup ?? 0)).toBe(1);
  });

  it('refuses what Telnyx refuses: credentials, missing or malformed fields, unknown calls; nothing is dialed', async () => {
    const before = (await s.stats()).calls.dials.accepted;
    const caller = await s.inbound({ to: '+15550001111' });
    expect((await s.request('POST', '/v2/calls', { to: '+15550002222' }, { authorization: 'Bearer wrong' })).status).toBe(401);
    const refusals: [Record<string, unknown>, string, string][] = [
      [{ to: undefined }, '10004', '/to'],
      [{ connection_id: '' }, '10004', '/connection_id'],
      [{ to: '5550002222' }, '10016', '/to'],
      [{ from: '+0123' }, '10016', '/from'],
      [{ timeout_secs: 3 }, '10015', '/timeout_secs'],
      [{ timeout_secs: 20.5 }, '10015', '/timeout_secs'],
      [{ link_to: 'v3:nobody' }, '10017', '/link_to'],
      [{ client_state: 'not base64!' }, '10015', '/client_state'],
      [{ webhook_url: 'ftp://x' }, '10003', '/webhook_url'],
    ];
    for (const [fields, code, pointer] of refusals) {
      const res = await s.dial({ to: '+15550002222', ...fields });
      expect([fields, res.status, res.body.errors?.[0]?.code, res.body.errors?.[0]?.source?.pointer]).toEqual([fields, 422, code, pointer]);
    }
    expect((await s.post('/v2/calls', 'not json')).status).toBe(422);
    const outside = await s.dial({ to: '+15550002222', webhook_url: 'http://192.0.2.10/webhooks/telnyx' });
    expect(outside.body.errors[0].detail).toMatch(/loopback/);

    const leg = caller.call_control_id;
    expect((await s.action('v3:unknown', 'hangup')).status).toBe(404);
    expect((await s.action(leg, 'transfer')).status).toBe(404);
    expect((await s.action(leg, 'bridge', {})).body.errors[0]).toMatchObject({ code: '10004', source: { pointer: '/call_control_id' } });
    expect((await s.action(leg, 'bridge', { call_control_id: leg })).status).toBe(422);
    expect((await s.action(leg, 'record_start', { channels: 'single' })).body.errors[0].source.pointer).toBe('/format');
    expect((await s.action(leg, 'record_start', { format: 'wav', channels: 'single' })).body.errors[0].detail).toMatch(/not been answered/);
    expect((await s.action(leg, 'answer', { client_state: '***' })).body.errors[0].source.pointer).toBe('/client_state');
    // A refused command leaves the leg as it was (its client_state included).
    expect(await s.leg(leg)).toMatchObject({ state: 'parked', client_state: null });
    expect((await s.stats()).calls.dials.accepted).toBe(before);
    await s.post(`/sandbox/calls/${encodeURIComponent(leg)}/hangup`);
  });

  it('drives the same way from the official telnyx SDK (dial, answer, bridge with call_control_id_to_bridge_with, hangup)', async () => {
    const client = new Telnyx({ apiKey: DEV_TELNYX_API_KEY, baseURL: `${s.url}/v2`, maxRetries: 0 });
    const target = freshNumber();
    await s.behaviours({ [target]: { answer_after_ms: 20 } });
    const caller = await s.inbound({ to: '+15550001111' });
    const dialed = await client.calls.dial({ connection_id: 'conn-test', to: target, from: '+15550001111', link_to: caller.call_control_id, command_id: 'sdk-dial' });
    const leg = dialed.data!.call_control_id;
    await s.waitForEvents({ leg }, ['call.answered']);
    expect(await client.calls.actions.answer(caller.call_control_id, { command_id: 'sdk-answer', client_state: clientState({ call_id: 'call_sdk' }) })).toEqual({ data: { result: 'ok' } });
    await client.calls.actions.bridge(caller.call_control_id, { call_control_id_to_bridge_with: leg, command_id: 'sdk-bridge' });
    await client.calls.actions.hangup(caller.call_control_id, { command_id: 'sdk-hangup' });
    await expect(client.calls.actions.hangup(leg, { command_id: 'sdk-hangup-leg' })).rejects.toMatchObject({ status: 422 });
    const events = await s.waitForEvents({ session: caller.call_session_id }, ['call.hangup', 'call.bridged']);
    await waitFor(() => s.events({ session: caller.call_session_id, type: 'call.hangup' }), (hs) => hs.length === 2, { what: 'both legs hung up' });
    expect(events.filter((e) => e.event_type === 'call.bridged').map((e) => e.payload.call_control_id).sort()).toEqual([caller.call_control_id, leg].sort());
    const callerEvents = s.events({ leg: caller.call_control_id });
    expect(types(callerEvents)).toEqual(['call.initiated', 'call.answered', 'call.bridged', 'call.hangup']);
    expect(callerEvents.slice(1).map((e) => e.payload.client_state)).toEqual([1, 2, 3].map(() => clientState({ call_id: 'call_sdk' })));
  });
});
