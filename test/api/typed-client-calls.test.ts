import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CALL_COLUMNS, CALL_VIEW_JSON, LEG_COLUMNS, LEG_VIEW_JSON, toCallView, toLegView, type CallRow, type LegRow } from '../../src/modules/calls/call-view.js';
import { DescribedApi, typedClient, type OpenApiDocument, type TypedClient } from '../support/described-api.js';
import { VoicePipeline } from '../support/voice-pipeline.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const OURS = '+15550400001';
const CALLER = '+15557740001';
const TARGET = '+15557740101';
const at = (base: number, seconds: number) => new Date(base + seconds * 1000).toISOString();

/** Calls through the generated client: voice settings, a call answered and ended, its views and webhooks, all held to the description. */
describe('the typed client on calls, against the running app', () => {
  let voice: VoicePipeline;
  let receiver: WebhookReceiver;
  let described: DescribedApi;
  let api: TypedClient;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    voice = await VoicePipeline.start();
    described = new DescribedApi((await (await fetch(`${voice.app.url}/docs-json`)).json()) as OpenApiDocument);
    api = typedClient(voice.app.url, voice.customer.apiKey, described);
  });
  afterAll(async () => {
    await voice?.stop();
    await receiver?.close();
  });

  it('sets voice settings, rings, answers and ends a call, and shows it, its timeline and its webhooks as described', async () => {
    const endpoint = await api.POST('/v2/webhook_endpoints', { body: { url: `${receiver.url}/calls`, event_types: ['call.initiated', 'call.answered', 'call.completed'] } });
    expect(endpoint.response.status).toBe(201);
    const number = await voice.customer.assignNumber(OURS, 'telnyx');
    const set = await api.PATCH('/v2/phone_numbers/{id}', {
      params: { path: { id: number.id } },
      body: { voice: { ring_plan: { targets: [{ to: TARGET, timeout_secs: 15 }], fallback: { action: 'voicemail' } } } },
    });
    expect(set.data!.data.voice).toEqual({ ring_plan: { targets: [{ to: TARGET, timeout_secs: 15 }], fallback: { action: 'voicemail' } }, transcribe: false });
    expect((await api.GET('/v2/phone_numbers/{id}', { params: { path: { id: number.id } } })).data!.data.voice?.ring_plan.targets).toHaveLength(1);
    const refused = await api.PATCH('/v2/phone_numbers/{id}', { params: { path: { id: number.id } }, body: { voice: { ring_plan: { targets: [] } } } });
    expect(refused.response.status).toBe(422);

    const call = await voice.incoming(CALLER, OURS);
    const callId = await voice.callId(call);
    const dial = await voice.dial(callId);
    const t0 = Date.now();
    await voice.legEvent(call, dial, 'call.initiated', { state: 'bridging' });
    await voice.legEvent(call, dial, 'call.answered', {}, { occurredAt: at(t0, 0) });
    await voice.callUntil(callId, (c) => c.status === 'in_progress', 'the call in progress');
    await voice.callerEvent(call, 'call.hangup', { hangup_cause: 'normal_clearing', hangup_source: 'caller', sip_hangup_cause: '200' }, { occurredAt: at(t0, 61) });
    await voice.settled();

    const shown = (await api.GET('/v2/calls/{id}', { params: { path: { id: callId } } })).data!.data;
    expect(shown).toMatchObject({ status: 'completed', direction: 'inbound', duration_seconds: 61, billable_minutes: 2, ring_plan: { next: 1 } });
    expect(shown.legs.map((l) => [l.target_index, l.to])).toEqual([[0, TARGET]]);
    expect((await api.GET('/v2/calls', { params: { query: { status: 'completed' } } })).data!.data.map((c) => c.id)).toEqual([callId]);
    const timeline = (await api.GET('/v2/calls/{id}/timeline', { params: { path: { id: callId } } })).data!.data;
    expect(timeline.map((e) => e.outcome)).toContain('applied');
    expect((await api.GET('/v2/calls/{id}', { params: { path: { id: 'call_00000000000000000000000000' } } })).response.status).toBe(404);

    const deliveries = await receiver.waitForRequests(3);
    expect(deliveries.map((d) => JSON.parse(d.body).type).sort()).toEqual(['call.answered', 'call.completed', 'call.initiated']);
    for (const delivery of deliveries) expect(described.checkWebhook(delivery.headers, delivery.body)).toEqual([]);
    const events = (await api.GET('/v2/events', { params: { query: { type: 'call.completed' } } })).data!.data;
    expect(events.map((e) => (e.data as { id: string }).id)).toEqual([callId]);

    // A customer event's legs are built in SQL (LEG_VIEW_JSON), the API's in JS (toLegView): one
    // shape, to the millisecond (the rows' timestamps carry microseconds, which both truncate).
    const legRows = (await voice.db.pool.query<LegRow>(`SELECT ${LEG_COLUMNS} FROM call_legs WHERE call_id = $1`, [callId])).rows;
    const inSql = (await voice.db.pool.query(`SELECT ${LEG_VIEW_JSON} AS view FROM call_legs WHERE call_id = $1`, [callId])).rows;
    expect(legRows).toHaveLength(1);
    expect(legRows[0].answered_at).toBeInstanceOf(Date);
    expect(inSql.map((r) => r.view)).toEqual(legRows.map((leg) => JSON.parse(JSON.stringify(toLegView(leg)))));
    // The call itself likewise (CALL_VIEW_JSON, toCallView), for the events a set statement writes.
    const callRow = (await voice.db.pool.query<CallRow>(`SELECT ${CALL_COLUMNS} FROM calls WHERE id = $1`, [callId])).rows[0];
    const callInSql = (await voice.db.pool.query(`SELECT ${CALL_VIEW_JSON} AS view FROM calls WHERE id = $1`, [callId])).rows[0].view;
    expect(callRow.ring_plan).not.toBeNull();
    expect(callInSql).toEqual(JSON.parse(JSON.stringify(toCallView(callRow, []))));
    const completed = (await voice.db.pool.query(`SELECT payload FROM outbound_events WHERE type = 'call.completed' AND payload->>'id' = $1`, [callId])).rows[0].payload;
    expect(completed.legs).toEqual([expect.objectContaining({ id: legRows[0].id, to: TARGET, status: 'answered', ended_at: null })]);
    expect(Object.keys(completed).sort()).toEqual(Object.keys(shown).sort());
  });

  it('places an outbound call: 202 with the call, replayed with its Idempotency-Key', async () => {
    const place = () => api.POST('/v2/calls', { body: { from: OURS, to: '+15557740202' }, params: { header: { 'Idempotency-Key': 'typed-call-1' } } });
    const placed = await place();
    expect(placed.response.status).toBe(202);
    expect(placed.data!.data).toMatchObject({ record_type: 'call', direction: 'outbound', from: OURS });
    const again = await place();
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(again.data!.data.id).toBe(placed.data!.data.id);
    const invalid = await api.POST('/v2/calls', { body: { from: '+15550409999', to: '+15557740202' } });
    expect(invalid.response.status).toBe(422);
    await voice.settled();
  });
});
