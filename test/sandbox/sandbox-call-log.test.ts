import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CallSandbox, freshNumber, type CallEvent } from '../support/call-sandbox.js';
import { waitFor } from '../support/wait.js';

/** The call log the audit reads, and the chaos knobs applied to call webhooks and call-control requests. */
describe('sandbox call log and call chaos', () => {
  let s: CallSandbox;
  const hangupOf = (leg: string) => s.waitForEvents({ leg }, ['call.hangup']);

  beforeAll(async () => {
    s = await CallSandbox.start({ SANDBOX_CALL_TIME_SCALE: '0.01' });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('GET /sandbox/calls/log: one JSON line per ended call with the fields audit:calls reads; answered calls completed, with their duration', async () => {
    const since = new Date().toISOString();
    const target = freshNumber();
    await s.behaviours({ [target]: { answer_after_ms: 0 } });
    const answered = await s.inbound({ to: '+15550001111', talk_ms: 150_000 });
    const leg = (await s.dial({ to: target, link_to: answered.call_control_id })).body.data.call_control_id;
    await s.waitForEvents({ leg }, ['call.answered']);
    await s.action(answered.call_control_id, 'answer');
    await s.action(answered.call_control_id, 'bridge', { call_control_id: leg });
    const abandoned = await s.inbound({ to: '+15550001111', caller_hangup_after_ms: 1000 });
    const refused = await s.inbound({ to: '+15550001111' });
    await s.action(refused.call_control_id, 'hangup');
    const live = await s.inbound({ to: '+15550001111' });
    await Promise.all([answered, abandoned, refused].map((c) => hangupOf(c.call_control_id)));

    const res = await fetch(`${s.url}/sandbox/calls/log?since=${encodeURIComponent(since)}`);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const text = await res.text();
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.trimEnd().split('\n').map((l) => JSON.parse(l));
    for (const line of lines) expect(Object.keys(line).sort()).toEqual(['call_session_id', 'duration_secs', 'end_time', 'from', 'start_time', 'status', 'to']);
    const bySession = new Map(lines.map((l) => [l.call_session_id, l]));
    expect(bySession.size).toBe(3);
    expect(bySession.has(live.call_session_id)).toBe(false);
    const completed = bySession.get(answered.call_session_id);
    expect(completed).toMatchObject({ status: 'completed', duration_secs: expect.any(Number) });
    expect(new Date(completed.end_time).getTime()).toBeGreaterThan(new Date(completed.start_time).getTime());
    expect(completed).toMatchObject({ from: '+13125550001', to: '+15550001111' });
    expect(bySession.get(abandoned.call_session_id)).toMatchObject({ status: 'canceled', duration_secs: 0 });
    expect(bySession.get(refused.call_session_id)).toMatchObject({ status: 'no-answer', duration_secs: 0 });
    expect(lines.map((l) => l.end_time)).toEqual(lines.map((l) => l.end_time).sort());

    expect((await fetch(`${s.url}/sandbox/calls/log?since=yesterday`)).status).toBe(400);
    expect(await (await fetch(`${s.url}/sandbox/calls/log?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).text()).toBe('');
    // since: the calls that ended at or after it (the same cut audit:calls --since makes on our side)
    const lastEnd = lines[lines.length - 1].end_time;
    const fromLast = (await (await fetch(`${s.url}/sandbox/calls/log?since=${encodeURIComponent(lastEnd)}`)).text()).trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(fromLast.map((l) => l.call_session_id)).toEqual([lines[lines.length - 1].call_session_id]);
    await s.post(`/sandbox/calls/${encodeURIComponent(live.call_control_id)}/hangup`);
  });

  it('duplicate=3,resign on an inbound call: every event of the call, dialed legs included, three times; one copy under a new event id', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { decline: true, after_ms: 0 } });
    const before = (await s.stats()).webhooks;
    const caller = await s.inbound({ to: '+15550001111' }, { 'x-sandbox-chaos': 'duplicate=3,resign' });
    const leg = (await s.dial({ to: target, link_to: caller.call_control_id })).body.data.call_control_id;
    await s.post(`/sandbox/calls/${encodeURIComponent(caller.call_control_id)}/hangup`);
    await s.idle();
    const byKind = new Map<string, CallEvent[]>();
    for (const e of s.events({ session: caller.call_session_id })) {
      const kind = `${e.payload.call_control_id === leg ? 'leg' : 'caller'} ${e.event_type}`;
      byKind.set(kind, [...(byKind.get(kind) ?? []), e]);
    }
    expect([...byKind.keys()].sort()).toEqual(['caller call.hangup', 'caller call.initiated', 'leg call.hangup', 'leg call.initiated']);
    for (const copies of byKind.values()) {
      expect(copies).toHaveLength(3);
      expect(new Set(copies.map((c) => c.id)).size).toBe(2);
      expect(new Set(copies.map((c) => c.occurred_at)).size).toBe(1);
      for (const copy of copies) await s.expectSigned(copy);
    }
    const after = (await s.stats()).webhooks;
    expect(after.deliveries - before.deliveries).toBe(12);
    expect(after.resigned - before.resigned).toBe(4);
  });

  it('reorder: the events of a call overtake each other, and every one still arrives once; early_receipt: a dial answers after its call.initiated is in', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { answer_after_ms: 0, talk_ms: 0 } });
    const caller = await s.inbound({ to: '+15550001111' }, { 'x-sandbox-chaos': 'reorder,delay_ms=20' });
    const legs = [];
    for (let i = 0; i < 3; i++) {
      const res = await s.dial({ to: target, link_to: caller.call_control_id, command_id: `reorder-${i}` }, { 'x-sandbox-chaos': 'early_receipt' });
      const leg = res.body.data.call_control_id;
      // The dial's own chaos header holds its answer until its first webhook is in.
      expect(s.events({ leg, type: 'call.initiated' })).toHaveLength(1);
      legs.push(leg);
    }
    await s.post(`/sandbox/calls/${encodeURIComponent(caller.call_control_id)}/hangup`);
    await waitFor(() => s.events({ session: caller.call_session_id }), (es) => es.length === 2 + 3 * 3, { what: 'all 11 events' });
    await s.idle();
    const events = s.events({ session: caller.call_session_id });
    expect(events).toHaveLength(11);
    expect(new Set(events.map((e) => e.id)).size).toBe(11);
    // Held a random 0..300 ms each, 11 events arrive in the order they happened about once in 10^5 runs.
    const overtaken = events.some((e, i) => i > 0 && e.occurred_at < events[i - 1]!.occurred_at);
    expect(overtaken).toBe(true);
  });

  it('fail_rate=1 on dials: 500, 503, or a dial carried out and never answered; retrying it with the same command_id gets that call, nothing dialed twice', async () => {
    const target = freshNumber();
    await s.behaviours({ [target]: { no_answer: true } });
    const before = (await s.stats()).calls;
    let heldDial: string | undefined;
    for (let i = 0; i < 40 && !heldDial; i++) {
      const commandId = `flaky-dial-${i}`;
      try {
        const res = await fetch(`${s.url}/v2/calls`, {
          method: 'POST',
          headers: { authorization: 'Bearer sandbox-telnyx-key', 'x-sandbox-chaos': 'fail_rate=1' },
          body: JSON.stringify({ connection_id: 'c', to: target, from: '+15550001111', command_id: commandId }),
          signal: AbortSignal.timeout(1500),
        });
        expect([500, 503]).toContain(res.status);
        await res.text();
      } catch (err) {
        expect((err as Error).name).toBe('TimeoutError');
        heldDial = commandId;
      }
    }
    expect(heldDial).toBeDefined();
    const retried = await s.dial({ to: target, command_id: heldDial });
    expect(retried.status).toBe(200);
    await hangupOf(retried.body.data.call_control_id);
    const after = (await s.stats()).calls;
    expect(after.dials.to[target]).toBe(1);
    expect(after.dials.replayed - before.dials.replayed).toBe(1);
    expect(after.faults.timeout - before.faults.timeout).toBe(1);
  });

  it('a stats reset zeroes the call counters but keeps live legs counted as live', async () => {
    const caller = await s.inbound({ to: '+15550001111' });
    const reset = (await (await fetch(`${s.url}/sandbox/stats/reset`, { method: 'POST' })).json()) as any;
    expect(reset.calls).toMatchObject({ inbound: 0, dials: { accepted: 0 }, commands: { requests: 0 } });
    expect(reset.calls.live_legs).toBeGreaterThanOrEqual(1);
    await s.post(`/sandbox/calls/${encodeURIComponent(caller.call_control_id)}/hangup`);
    await hangupOf(caller.call_control_id);
    expect((await s.stats()).calls).toMatchObject({ hangups: { originator_cancel: 1 }, legs_per_call: { '0': 1 }, live_legs: reset.calls.live_legs - 1 });
  });
});
