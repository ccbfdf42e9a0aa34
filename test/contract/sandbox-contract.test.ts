import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEV_TELNYX_API_KEY, DEV_TWILIO_ACCOUNT_SID, DEV_TWILIO_AUTH_TOKEN, DEV_VONAGE_API_KEY, DEV_VONAGE_API_SECRET } from '../../src/telephony/dev-credentials.js';
import { CallSandbox, freshNumber } from '../support/call-sandbox.js';
import { checkWebhook, ContractRecorder, expectConformant } from '../support/carrier-contract/index.js';
import { waitFor } from '../support/wait.js';

const TELNYX = { authorization: `Bearer ${DEV_TELNYX_API_KEY}` };
const TWILIO = { authorization: `Basic ${Buffer.from(`${DEV_TWILIO_ACCOUNT_SID}:${DEV_TWILIO_AUTH_TOKEN}`).toString('base64')}` };
const VONAGE = { authorization: `Basic ${Buffer.from(`${DEV_VONAGE_API_KEY}:${DEV_VONAGE_API_SECRET}`).toString('base64')}` };
const VONAGE_QUERY = `api_key=${DEV_VONAGE_API_KEY}&api_secret=${DEV_VONAGE_API_SECRET}`;
const TWILIO_BASE = `/twilio/2010-04-01/Accounts/${DEV_TWILIO_ACCOUNT_SID}`;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/**
 * The sandbox (as `node dist/main.js sandbox` runs it) playing the three carriers: each request the
 * test sends is one the document allows, and each answer and each webhook the sandbox sends back
 * must be what the document describes.
 */
describe('contract tier: the sandbox answers and calls back as the carriers document', () => {
  let sandbox: CallSandbox;
  const recorder = new ContractRecorder('sandbox');
  beforeAll(async () => {
    sandbox = await CallSandbox.start({ SANDBOX_RECEIPT_DELAY_MS: '20' });
  });
  afterAll(async () => {
    await sandbox?.stop();
  });

  /**
   * One documented request to the sandbox; its exchange recorded (the request checked too, so the
   * test itself stays honest) at `recordedAt`: the sandbox serves Vonage at its root, where the
   * Reports API's `/v2/reports/…` would read as Telnyx's `/v2`, so that one is recorded under the
   * fakes' Vonage root.
   */
  async function call(method: string, path: string, headers: Record<string, string>, body?: string, recordedAt = path): Promise<any> {
    const res = await fetch(`${sandbox.url}${path}`, { method, headers, body });
    const text = await res.text();
    recorder.record({ method, url: recordedAt, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])), body: body ?? '' }, { status: res.status, headers: Object.fromEntries(res.headers), body: text });
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  const json = (headers: Record<string, string>) => ({ ...headers, 'content-type': 'application/json' });
  const formHeaders = (headers: Record<string, string>) => ({ ...headers, 'content-type': 'application/x-www-form-urlencoded' });

  function webhooksTo(path: string) {
    return sandbox.receiver.requests.filter((r) => r.path === path);
  }
  function checkWebhooks(api: 'telnyx' | 'vonage-messages', path: string, filter: (body: any) => boolean = () => true): void {
    for (const request of webhooksTo(path).filter((r) => filter(JSON.parse(r.body)))) recorder.divergences.push(...checkWebhook(api, { ...request, url: request.path }));
  }

  it('sends: Telnyx, Twilio and Vonage answers, and the Telnyx and Vonage receipts', async () => {
    const telnyx = await call('POST', '/v2/messages', json(TELNYX), JSON.stringify({ from: '+13125550100', to: freshNumber(), text: 'contract', type: 'SMS' }));
    await call('POST', `${TWILIO_BASE}/Messages.json`, formHeaders(TWILIO), form({ From: '+13125550100', To: freshNumber(), Body: 'contract' }));
    const vonage = await call('POST', '/v1/messages', json(VONAGE), JSON.stringify({ message_type: 'text', channel: 'sms', from: '13125550100', to: freshNumber().slice(1), text: 'contract', client_ref: 'contract-ref' }));
    await waitFor(() => webhooksTo('/webhooks/telnyx').filter((r) => r.body.includes(telnyx.data.id)), (rs) => rs.some((r) => r.body.includes('message.finalized')), { what: 'the Telnyx receipts' });
    await waitFor(() => webhooksTo('/webhooks/vonage/messages').filter((r) => r.body.includes(vonage.message_uuid)), (rs) => rs.length > 0, { what: 'the Vonage receipts' });
    for (const carrier of ['telnyx', 'twilio', 'vonage']) {
      const res = await fetch(`${sandbox.url}/sandbox/inbound`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ from: '+13125550177', to: '+13125550100', text: 'inbound', carrier }) });
      expect(res.status).toBeLessThan(300);
    }
    await sandbox.idle();
    checkWebhooks('telnyx', '/webhooks/telnyx', (b) => b.data.event_type.startsWith('message.'));
    checkWebhooks('vonage-messages', '/webhooks/vonage/messages');
    expectConformant(recorder, 'sandbox sends');
  });

  it('the lookups of a send whose answer was lost: Telnyx detail records, Twilio ListMessage, Vonage Reports records', async () => {
    // Numbers of its own: the sandbox limits each sending number's throughput, as carriers do.
    const [from, to] = [freshNumber(), freshNumber()];
    const since = new Date(Date.now() - 60_000).toISOString();
    await call('POST', '/v2/messages', json(TELNYX), JSON.stringify({ from: from, to, text: 'lookup', type: 'SMS' }));
    await call('POST', `${TWILIO_BASE}/Messages.json`, formHeaders(TWILIO), form({ From: from, To: to, Body: 'lookup' }));
    await call('POST', '/v1/messages', json(VONAGE), JSON.stringify({ message_type: 'text', channel: 'sms', from: from.slice(1), to: to.slice(1), text: 'lookup', client_ref: 'msg_01hzzzzzzzzzzzzzzzzzzzzzzz' }));
    // The sandbox takes a send into its list once it has been through its queue.
    await sandbox.idle();
    const telnyx = await call('GET', `/v2/detail_records?${new URLSearchParams({ 'filter[record_type]': 'messaging', 'filter[cli]': from, 'filter[cld]': to, 'filter[created_at][gte]': since, 'page[size]': '50' })}`, TELNYX);
    expect(telnyx.data).toHaveLength(1);
    const twilio = await call('GET', `${TWILIO_BASE}/Messages.json?${new URLSearchParams({ To: to, From: from, PageSize: '50' })}`, TWILIO);
    expect(twilio.messages).toHaveLength(1);
    const window = new URLSearchParams({ account_id: DEV_VONAGE_API_KEY, product: 'MESSAGES', direction: 'outbound', date_start: since, date_end: new Date(Date.now() + 60_000).toISOString() });
    const vonage = await call('GET', `/v2/reports/records?${window}`, VONAGE, undefined, `/vonage/v2/reports/records?${window}`);
    expect(vonage.records.filter((r: { client_ref?: string }) => r.client_ref === 'msg_01hzzzzzzzzzzzzzzzzzzzzzzz').length).toBeGreaterThan(0);
    await sandbox.idle();
    expectConformant(recorder, 'sandbox lookups');
  });

  it('Telnyx Call Control: dial and every action answer as documented; the call events too', async () => {
    const caller = await sandbox.inbound({ to: freshNumber() });
    await call('POST', `/v2/calls/${encodeURIComponent(caller.call_control_id)}/actions/answer`, json(TELNYX), JSON.stringify({ command_id: 'a-1' }));
    const dialed = await call('POST', '/v2/calls', json(TELNYX), JSON.stringify({ connection_id: 'conn-test', from: '+13125550100', to: freshNumber(), timeout_secs: 20, link_to: caller.call_control_id, client_state: Buffer.from('{}').toString('base64'), command_id: 'd-1' }));
    const leg = dialed.data.call_control_id;
    await sandbox.waitForEvents({ leg }, ['call.answered']);
    const on = (id: string, action: string, body: object) => call('POST', `/v2/calls/${encodeURIComponent(id)}/actions/${action}`, json(TELNYX), JSON.stringify({ command_id: `${action}-1`, ...body }));
    await on(caller.call_control_id, 'bridge', { call_control_id: leg });
    await on(caller.call_control_id, 'record_start', { format: 'mp3', channels: 'single' });
    await on(caller.call_control_id, 'transcription_start', {});
    await on(leg, 'hangup', {});
    await on(caller.call_control_id, 'hangup', {});
    await sandbox.waitForEvents({ leg: caller.call_control_id }, ['call.hangup']);
    await sandbox.idle();
    checkWebhooks('telnyx', '/webhooks/telnyx', (b) => b.data.event_type.startsWith('call.'));
    expectConformant(recorder, 'sandbox call control');
  });

  it('numbers: search, order, order status, list and release at each carrier', async () => {
    const telnyxOffered = await call('GET', '/v2/available_phone_numbers?filter[country_code]=US&filter[limit]=2', TELNYX);
    const telnyxNumber = telnyxOffered.data?.[0]?.phone_number;
    const order = await call('POST', '/v2/number_orders', json(TELNYX), JSON.stringify({ phone_numbers: [{ phone_number: telnyxNumber }], customer_reference: 'contract-order' }));
    await call('GET', '/v2/number_orders?filter[customer_reference]=contract-order', TELNYX);
    if (order.data?.id) await call('GET', `/v2/number_orders/${order.data.id}`, TELNYX);
    const held = await call('GET', '/v2/phone_numbers?page[size]=250', TELNYX);
    const id = held.data?.find((n: any) => n.phone_number === telnyxNumber)?.id;
    if (id) await call('DELETE', `/v2/phone_numbers/${id}`, TELNYX);

    const twilioOffered = await call('GET', `${TWILIO_BASE}/AvailablePhoneNumbers/US/Local.json?PageSize=2`, TWILIO);
    const twilioNumber = twilioOffered.available_phone_numbers?.[0]?.phone_number;
    const bought = await call('POST', `${TWILIO_BASE}/IncomingPhoneNumbers.json`, formHeaders(TWILIO), form({ PhoneNumber: twilioNumber }));
    await call('GET', `${TWILIO_BASE}/IncomingPhoneNumbers.json?PageSize=1000`, TWILIO);
    if (bought.sid) await call('DELETE', `${TWILIO_BASE}/IncomingPhoneNumbers/${bought.sid}.json`, TWILIO);

    const vonageOffered = await call('GET', `/number/search?country=US&size=2&${VONAGE_QUERY}`, {});
    const msisdn = vonageOffered.numbers?.[0]?.msisdn;
    await call('POST', `/number/buy?${VONAGE_QUERY}`, formHeaders({}), form({ country: 'US', msisdn }));
    await call('GET', `/account/numbers?size=100&${VONAGE_QUERY}`, {});
    await call('POST', `/number/cancel?${VONAGE_QUERY}`, formHeaders({}), form({ country: 'US', msisdn }));
    await sandbox.idle();
    checkWebhooks('telnyx', '/webhooks/telnyx', (b) => b.data.event_type.startsWith('number_order'));
    expectConformant(recorder, 'sandbox numbers');
  });
});
