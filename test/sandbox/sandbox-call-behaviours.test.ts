import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CallSandbox, clientState, freshNumber, type CallEvent } from '../support/call-sandbox.js';
import { waitFor } from '../support/wait.js';

/**
 * Target behaviours chosen per number, and what Telnyx does with the legs of a call: the bridged
 * partner hangs up with its leg, a dialed leg keeps ringing when its caller leaves. Call time runs
 * 100 times faster (SANDBOX_CALL_TIME_SCALE=0.01): timeout_secs 60 rings 600 ms.
 */
describe('sandbox call behaviours and leg semantics', () => {
  let s: CallSandbox;
  const hangupOf = async (leg: string): Promise<CallEvent['payload']> => (await s.waitForEvents({ leg }, ['call.hangup']))
    .find((e) => e.event_type === 'call.hangup')!.payload;
  const dialTo = async (to: string, fields: Record<string, unknown> = {}) => {
    const res = await s.dial({ to, ...fields });
    expect(res.status).toBe(200);
    return res.body.data.call_control_id as string;
  };

  beforeAll(async () => {
    s = await CallSandbox.start({ SANDBOX_CALL_TIME_SCALE: '0.01' });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('decline, busy, no_answer and sip_error end the leg with Telnyx\'s cause and SIP code', async () => {
    const [declines, busy, silent, failing] = [freshNumber(), freshNumber(), freshNumber(), freshNumber()];
    await s.behaviours({ [declines]: { decline: true }, [busy]: { busy: true, after_ms: 10 }, [silent]: { no_answer: true }, [failing]: { sip_error: 504 } });
    const legs = await Promise.all([declines, busy, silent, failing].map((n) => dialTo(n)));
    const hangups = await Promise.all(legs.map(hangupOf));
    expect(hangups.map((h) => [h.hangup_cause, h.hangup_source, h.sip_hangup_cause])).toEqual([
      ['call_rejected', 'callee', '603'],
      ['user_busy', 'callee', '486'],
      ['timeout', 'unknown', '487'],
      ['unspecified', 'callee', '504'],
    ]);
    for (const leg of legs) expect(s.events({ leg, type: 'call.answered' })).toHaveLength(0);
  });

  it('sip_503 with times: the first dial fails with 503, the next one answers as the default does', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { sip_503: true, times: 1 } });
    const first = await dialTo(target);
    expect(await hangupOf(first)).toMatchObject({ hangup_cause: 'unspecified', sip_hangup_cause: '503' });
    const second = await dialTo(target);
    await s.waitForEvents({ leg: second }, ['call.answered']);
    await s.action(second, 'hangup');
  });

  it('dial_error: the dial itself is answered with that status; a 5xx is not remembered, so its retry with the same command_id dials', async () => {
    const refused = freshNumber();
    const flaky = freshNumber();
    await s.behaviours({ [refused]: { dial_error: 422 }, [flaky]: [{ dial_error: 500, times: 1 }, { answer_after_ms: 10 }] });
    const before = (await s.stats()).calls;
    const no = await s.dial({ to: refused, command_id: 'refused-1' });
    expect(no.status).toBe(422);
    expect((await s.dial({ to: refused, command_id: 'refused-1' })).body).toEqual(no.body);
    const failed = await s.dial({ to: flaky, command_id: 'flaky-1' });
    expect(failed.status).toBe(500);
    const retried = await s.dial({ to: flaky, command_id: 'flaky-1' });
    expect(retried.status).toBe(200);
    await s.waitForEvents({ leg: retried.body.data.call_control_id }, ['call.answered']);
    await s.action(retried.body.data.call_control_id, 'hangup');
    const after = (await s.stats()).calls;
    expect(after.dials.to[refused]).toBeUndefined();
    expect(after.dials.to[flaky]).toBe(1);
    expect(after.dials.errors['422'] - (before.dials.errors['422'] ?? 0)).toBe(1);
    expect(after.dials.replayed - before.dials.replayed).toBe(1);
  });

  it('the control endpoint validates the whole body before changing anything, shows the scripts, and DELETE restores the defaults', async () => {
    const target = freshNumber();
    const bad = await s.post('/sandbox/calls/behaviours', { [target]: { busy: true }, '+1555bad': { busy: true } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].detail).toMatch(/\+1555bad/);
    expect((await s.post('/sandbox/calls/behaviours', { time_scale: 0 })).status).toBe(400);
    expect((await s.request('GET', '/sandbox/calls/behaviours')).body.numbers[target]).toBeUndefined();
    await s.behaviours({ [target]: [{ sip_503: true, times: 2 }, { busy: true }], time_scale: 0.02 });
    const view = (await s.request('GET', '/sandbox/calls/behaviours')).body;
    expect(view.numbers[target]).toEqual([{ sip_error: 503, after_ms: 100, times: 2 }, { busy: true, after_ms: 100 }]);
    expect(view.time_scale).toBe(0.02);
    const reset = (await s.request('DELETE', '/sandbox/calls/behaviours')).body;
    expect(reset).toEqual({ default: { answer_after_ms: 300, talk_ms: 2000 }, numbers: {}, time_scale: 0.01, lose_command_answers: {}, command_id_window_ms: 60_000 });
  });

  it('a bridged call: either leg hanging up hangs up the other, as the side Telnyx ended', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { answer_after_ms: 10 } });
    const caller = await s.inbound({ to: '+15550001111' });
    const leg = await dialTo(target, { link_to: caller.call_control_id });
    await s.waitForEvents({ leg }, ['call.answered']);
    expect((await s.action(caller.call_control_id, 'answer')).status).toBe(200);
    expect((await s.action(caller.call_control_id, 'answer')).status).toBe(422);
    expect((await s.action(caller.call_control_id, 'bridge', { call_control_id: leg })).status).toBe(200);
    await s.waitForEvents({ leg }, ['call.bridged']);
    expect((await s.post(`/sandbox/calls/${encodeURIComponent(leg)}/hangup`)).status).toBe(200);
    expect(await hangupOf(leg)).toMatchObject({ hangup_cause: 'normal_clearing', hangup_source: 'callee', sip_hangup_cause: '200' });
    expect(await hangupOf(caller.call_control_id)).toMatchObject({ hangup_cause: 'normal_clearing', hangup_source: 'callee' });
    expect(s.events({ session: caller.call_session_id }).map((e) => `${e.payload.call_control_id === leg ? 'leg' : 'caller'} ${e.event_type}`)).toEqual([
      'caller call.initiated', 'leg call.initiated', 'leg call.answered', 'caller call.answered',
      'caller call.bridged', 'leg call.bridged', 'leg call.hangup', 'caller call.hangup',
    ]);
    expect((await s.post(`/sandbox/calls/${encodeURIComponent(leg)}/hangup`)).status).toBe(422);
  });

  it('a caller who hangs up while a dialed leg rings leaves that leg ringing: until its own timeout, or until the app hangs it up', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { no_answer: true } });
    const before = (await s.stats()).calls.dials;
    const left = await s.inbound({ to: '+15550001111', caller_hangup_after_ms: 0 });
    await hangupOf(left.call_control_id);
    const forgotten = await dialTo(target, { link_to: left.call_control_id, timeout_secs: 60 });
    const caller = await s.inbound({ to: '+15550001111' });
    const cancelled = await dialTo(target, { link_to: caller.call_control_id, timeout_secs: 600 });
    expect((await s.post(`/sandbox/calls/${encodeURIComponent(caller.call_control_id)}/hangup`)).status).toBe(200);
    expect(await hangupOf(caller.call_control_id)).toMatchObject({ hangup_cause: 'originator_cancel', hangup_source: 'caller' });
    expect(await s.leg(cancelled)).toMatchObject({ is_alive: true, state: 'bridging' });
    expect((await s.action(cancelled, 'hangup')).status).toBe(200);
    expect(await hangupOf(cancelled)).toMatchObject({ hangup_cause: 'originator_cancel', hangup_source: 'caller', sip_hangup_cause: '487' });
    expect(await hangupOf(forgotten)).toMatchObject({ hangup_cause: 'timeout' });
    const after = (await s.stats()).calls.dials;
    expect(after.after_caller_hangup - before.after_caller_hangup).toBe(1);
    expect(after.left_ringing - before.left_ringing).toBe(1);
  });

  it('counts dials a careful app would not make: while another leg rings, and to a number that declined this call', async () => {
    const declines = freshNumber();
    const rings = freshNumber();
    await s.behaviours({ [declines]: { decline: true, after_ms: 0 }, [rings]: { answer_after_ms: 60_000 } });
    const before = (await s.stats()).calls;
    const caller = await s.inbound({ to: '+15550001111' });
    const first = await dialTo(declines, { link_to: caller.call_control_id });
    await hangupOf(first);
    const second = await dialTo(rings, { link_to: caller.call_control_id, timeout_secs: 600 });
    const third = await dialTo(declines, { link_to: caller.call_control_id });
    await hangupOf(third);
    await s.action(second, 'hangup');
    await s.action(caller.call_control_id, 'hangup');
    await hangupOf(caller.call_control_id);
    const after = (await s.stats()).calls;
    expect(after.dials.after_decline - before.dials.after_decline).toBe(1);
    expect(after.dials.while_another_rings - before.dials.while_another_rings).toBe(1);
    expect(after.legs_per_call['3'] - (before.legs_per_call['3'] ?? 0)).toBe(1);
  });

  it('recording: after record_start, the caller\'s hangup is followed by call.recording.saved whose URLs serve audio', async () => {
    const caller = await s.inbound({ to: '+15550001111', talk_ms: 50_000 });
    await s.action(caller.call_control_id, 'answer');
    expect((await s.action(caller.call_control_id, 'record_start', { format: 'mp3', channels: 'single', command_id: 'rec-1' })).status).toBe(200);
    expect((await s.action(caller.call_control_id, 'record_start', { format: 'mp3', channels: 'single' })).status).toBe(422);
    const events = await s.waitForEvents({ leg: caller.call_control_id }, ['call.recording.saved']);
    expect(events.map((e) => e.event_type)).toEqual(['call.initiated', 'call.answered', 'call.hangup', 'call.recording.saved']);
    const saved = events[3]!.payload;
    expect(saved).toMatchObject({ call_control_id: caller.call_control_id, call_session_id: caller.call_session_id, channels: 'single', recording_id: expect.any(String) });
    expect(saved.recording_urls).toEqual({ mp3: expect.stringMatching(/\.mp3$/), wav: expect.stringMatching(/\.wav$/) });
    expect(new Date(saved.recording_ended_at).getTime()).toBeGreaterThanOrEqual(new Date(saved.recording_started_at).getTime());
    const wav = await fetch(saved.recording_urls.wav);
    expect([wav.status, wav.headers.get('content-type')]).toEqual([200, 'audio/wav']);
    expect(Buffer.from(await wav.arrayBuffer()).toString('ascii', 0, 4)).toBe('RIFF');
    expect((await fetch(saved.recording_urls.mp3)).headers.get('content-type')).toBe('audio/mpeg');
    expect((await fetch(`${s.url}/sandbox/recordings/00000000-0000-0000-0000-000000000000.wav`)).status).toBe(404);
  });

  it('recording with max_length stops by itself; transcription sends the callee\'s transcript as final fragments while the bridge lasts', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { answer_after_ms: 10, transcript: ['first line', 'second line'] } });
    const caller = await s.inbound({ to: '+15550001111' });
    const leg = await dialTo(target, { link_to: caller.call_control_id });
    await s.waitForEvents({ leg }, ['call.answered']);
    await s.action(caller.call_control_id, 'answer');
    await s.action(caller.call_control_id, 'bridge', { call_control_id: leg });
    await s.action(caller.call_control_id, 'record_start', { format: 'wav', channels: 'dual', max_length: 20 });
    await s.action(caller.call_control_id, 'transcription_start', { command_id: 'tr-1' });
    const fragments = await waitFor(() => s.events({ leg: caller.call_control_id, type: 'call.transcription' }), (es) => es.length === 2, { what: 'two fragments' });
    expect(fragments.map((f) => f.payload.transcription_data)).toEqual([
      { transcript: 'first line', is_final: true, confidence: expect.any(Number) },
      { transcript: 'second line', is_final: true, confidence: expect.any(Number) },
    ]);
    await s.waitForEvents({ leg: caller.call_control_id }, ['call.recording.saved']);
    expect(await s.leg(caller.call_control_id)).toMatchObject({ is_alive: true, recording: null });
    await s.action(leg, 'hangup');
    await hangupOf(caller.call_control_id);
    await s.idle();
    expect(s.events({ leg: caller.call_control_id, type: 'call.recording.saved' })).toHaveLength(1);
  });

  it('answer_then_drop: the target answers and hangs up at once, and its call.hangup reaches the app before its call.answered', async () => {
    const drops = freshNumber();
    const dropsLater = freshNumber();
    const next = freshNumber();
    await s.behaviours({ [drops]: { answer_then_drop: true, answer_after_ms: 10 }, [dropsLater]: { answer_after_ms: 10, drop_after_ms: 100 }, [next]: { no_answer: true } });
    expect((await s.request('GET', '/sandbox/calls/behaviours')).body.numbers[drops]).toEqual([{ answer_after_ms: 10, drop_after_ms: 0 }]);
    const before = (await s.stats()).calls.dials;
    const caller = await s.inbound({ to: '+15550001111' });
    for (const target of [drops, dropsLater]) {
      const leg = await dialTo(target, { link_to: caller.call_control_id });
      const events = await s.waitForEvents({ leg }, ['call.answered', 'call.hangup']);
      expect(events.map((e) => e.event_type)).toEqual(['call.initiated', 'call.hangup', 'call.answered']);
      const [, hangup, answered] = events;
      expect(hangup!.payload).toMatchObject({ hangup_cause: 'normal_clearing', hangup_source: 'callee' });
      // the carrier's clocks still tell the truth: answered first
      expect(Date.parse(answered!.occurred_at)).toBeLessThanOrEqual(Date.parse(hangup!.occurred_at));
      expect(await s.leg(leg)).toMatchObject({ is_alive: false, state: 'hangup', answered_at: expect.any(String) });
      // the late answer tempts the app to bridge a leg that no longer exists
      expect((await s.action(caller.call_control_id, 'answer')).status).toBe(target === drops ? 200 : 422);
      expect((await s.action(caller.call_control_id, 'bridge', { call_control_id: leg })).body.errors[0].code).toBe('90018');
    }
    // the dropped legs ring no more: the next dial is not "while another rings"
    const third = await dialTo(next, { link_to: caller.call_control_id, timeout_secs: 600 });
    await s.action(third, 'hangup');
    await s.action(caller.call_control_id, 'hangup');
    const after = (await s.stats()).calls.dials;
    expect(after.while_another_rings - before.while_another_rings).toBe(0);
    expect(after.after_caller_hangup - before.after_caller_hangup).toBe(0);
  });

  it('lose_command_answers: the dial is carried out but its answer lost (connection closed, or 504); the retry with the same command_id gets the leg, dials nothing', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { no_answer: true }, lose_command_answers: { dial: 1 } });
    expect((await s.request('GET', '/sandbox/calls/behaviours')).body.lose_command_answers).toEqual({ dial: { times: 1 } });
    const before = (await s.stats()).calls;
    const caller = await s.inbound({ to: '+15550001111' });
    const intent = { to: target, link_to: caller.call_control_id, timeout_secs: 600, client_state: clientState({ leg: 'lost-0' }) };
    await expect(s.dial({ ...intent, command_id: 'lost-dial-1' })).rejects.toThrow();
    const ringing = await waitFor(() => s.request('GET', `/sandbox/calls?session=${caller.call_session_id}`), (r) => r.body.data.length === 2, { what: 'the leg the lost dial made' });
    const leg = ringing.body.data[1].call_control_id;
    expect(ringing.body.data[1]).toMatchObject({ to: target, state: 'bridging' });
    const retried = await s.dial({ ...intent, command_id: 'lost-dial-1' });
    expect([retried.status, retried.body.data.call_control_id]).toEqual([200, leg]);
    expect((await s.request('GET', '/sandbox/calls/behaviours')).body.lose_command_answers).toEqual({});

    // answered 504 after doing it: a hangup that did hang up
    await s.behaviours({ lose_command_answers: { hangup: { times: 1, status: 504 } } });
    const hungUp = await s.action(leg, 'hangup', { command_id: 'lost-hangup-1' });
    expect([hungUp.status, hungUp.body.errors[0].code]).toEqual([504, '10007']);
    expect(await hangupOf(leg)).toMatchObject({ hangup_cause: 'originator_cancel' });
    expect((await s.action(leg, 'hangup', { command_id: 'lost-hangup-1' })).status).toBe(200);
    // a dial whose answer is lost still counts as ringing: the next one into the call is "while another rings"
    await s.behaviours({ lose_command_answers: { dial: { times: 1, status: 504 } } });
    expect((await s.dial({ ...intent, client_state: clientState({ leg: 'lost-1' }), command_id: 'lost-dial-2' })).status).toBe(504);
    const second = (await s.dial({ ...intent, client_state: clientState({ leg: 'lost-2' }), command_id: 'lost-dial-3' })).body.data.call_control_id;
    await s.action(caller.call_control_id, 'hangup');
    await hangupOf(caller.call_control_id);
    for (const live of (await s.request('GET', `/sandbox/calls?session=${caller.call_session_id}`)).body.data.filter((l: any) => l.is_alive)) await s.action(live.call_control_id, 'hangup');
    await hangupOf(second);
    const after = (await s.stats()).calls;
    expect(after.lost_answers).toEqual({ dial: (before.lost_answers.dial ?? 0) + 2, hangup: (before.lost_answers.hangup ?? 0) + 1 });
    expect(after.dials.to[target]).toBe(3);
    expect(after.dials.replayed - before.dials.replayed).toBe(1);
    expect(after.commands.replayed - before.commands.replayed).toBe(1);
    expect(after.dials.while_another_rings - before.dials.while_another_rings).toBe(1);
    expect(after.dials.duplicate_legs - before.dials.duplicate_legs).toBe(0);
  });

  it('a command_id is honoured for Telnyx\'s window only: past it the same dial makes a second leg, counted as duplicate_legs, as is a new dial for the same client_state', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { no_answer: true }, command_id_window_ms: 300 });
    try {
      const before = (await s.stats()).calls.dials;
      const caller = await s.inbound({ to: '+15550001111' });
      const intent = { to: target, link_to: caller.call_control_id, timeout_secs: 600, client_state: clientState({ leg: 'window-0' }), command_id: 'window-dial-1' };
      const first = await s.dial(intent);
      const startedAt = Date.now();
      const replay = await s.dial(intent);
      expect(replay.body.data.call_control_id).toBe(first.body.data.call_control_id);
      expect(Date.now() - startedAt).toBeLessThan(300); // the replay fell inside the window
      await waitFor(async () => Date.now(), (now) => now - startedAt > 400, { what: 'the command_id window to pass' });
      const late = await s.dial(intent);
      expect(late.status).toBe(200);
      expect(late.body.data.call_control_id).not.toBe(first.body.data.call_control_id);
      const fresh = await s.dial({ ...intent, command_id: 'window-dial-2' });
      expect(fresh.body.data.call_control_id).not.toBe(late.body.data.call_control_id);
      await s.action(caller.call_control_id, 'hangup');
      for (const leg of [first, late, fresh]) await s.action(leg.body.data.call_control_id, 'hangup');
      const after = (await s.stats()).calls.dials;
      expect(after.replayed - before.replayed).toBe(1);
      expect(after.duplicate_legs - before.duplicate_legs).toBe(2);
      expect(after.while_another_rings - before.while_another_rings).toBe(2);
      expect(after.to[target]).toBe(3);
    } finally {
      await s.behaviours({ command_id_window_ms: 60_000 });
    }
  });

  it('refuses a lose_command_answers or command_id_window_ms it cannot play, changing nothing', async () => {
    for (const body of [{ lose_command_answers: { transfer: 1 } }, { lose_command_answers: { dial: { times: 1, status: 404 } } }, { command_id_window_ms: -1 }, { command_id_window_ms: 1.5 }]) {
      const res = await s.post('/sandbox/calls/behaviours', { ...body, time_scale: 0.5 });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].detail).toMatch(/lose_command_answers|command_id_window_ms/);
    }
    expect((await s.request('GET', '/sandbox/calls/behaviours')).body).toMatchObject({ time_scale: 0.01, lose_command_answers: {}, command_id_window_ms: 60_000 });
  });
});
