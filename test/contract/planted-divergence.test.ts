import { describe, expect, it } from '@jest/globals';
import { checkRequest, checkResponse, checkWebhook, type Divergence } from '../support/carrier-contract/index.js';
import { carrierDocuments } from '../support/carrier-contract/documents.js';
import { checkSchema } from '../support/carrier-contract/schema-check.js';

const bearer = { authorization: 'Bearer KEY_test', 'content-type': 'application/json' };
const basic = (user: string, secret: string) => `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}`;

const divergenceAt = (divergences: Divergence[], field: string) => divergences.find((d) => d.field === field);

describe('the contract tier fails on a planted divergence, naming operation, field, document and what was sent', () => {
  it('a valid Telnyx send passes; a wrong type, a missing required field and an undeclared Idempotency-Key each diverge', () => {
    const valid = { method: 'POST', url: '/v2/messages', headers: bearer, body: JSON.stringify({ from: '+13125550100', to: '+13125550111', text: 'hi', type: 'SMS' }) };
    expect(checkRequest(valid)).toEqual([]);

    const wrongType = checkRequest({ ...valid, body: JSON.stringify({ from: '+13125550100', to: 13125550111, text: 'hi' }) });
    expect(divergenceAt(wrongType, '/body/to')).toMatchObject({ operation: 'SendMessage POST /messages', doc: expect.stringMatching(/type string/), sent: '13125550111' });

    const keyed = checkRequest({ ...valid, headers: { ...bearer, 'idempotency-key': 'msg-1' } });
    expect(keyed).toEqual([{ operation: 'SendMessage POST /messages', field: '/header/idempotency-key', doc: expect.stringMatching(/does not declare/), sent: '"msg-1"' }]);

    const dial = checkRequest({ method: 'POST', url: '/v2/calls', headers: bearer, body: JSON.stringify({ to: '+13125550111', from: '+13125550100' }) });
    expect(divergenceAt(dial, '/body/connection_id')).toMatchObject({ operation: 'DialCall POST /calls', doc: expect.stringMatching(/required property "connection_id"/), sent: 'nothing' });
  });

  it('authentication, content type, parameters and the operation itself are checked', () => {
    const noAuth = checkRequest({ method: 'POST', url: '/v2/calls/v3:abc/actions/answer', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(divergenceAt(noAuth, '/header/authorization')).toMatchObject({ operation: 'AnswerCall POST /calls/{call_control_id}/actions/answer', doc: expect.stringMatching(/Bearer/i) });

    const twilioJson = checkRequest({ method: 'POST', url: '/twilio/2010-04-01/Accounts/AC1/Messages.json', headers: { authorization: basic('AC1', 'tok'), 'content-type': 'application/json' }, body: '{"To":"+1"}' });
    expect(divergenceAt(twilioJson, '/header/content-type')).toMatchObject({ doc: 'application/x-www-form-urlencoded', sent: '"application/json"' });

    const twilioForm = checkRequest({
      method: 'POST', url: '/twilio/2010-04-01/Accounts/AC1/Messages.json', headers: { authorization: basic('AC1', 'tok'), 'content-type': 'application/x-www-form-urlencoded', 'i-twilio-idempotency-token': 'm1' },
      body: new URLSearchParams({ To: '+13125550111', From: '+13125550100', Body: 'hi', ValidityPeriod: 'soon' }).toString(),
    });
    expect(divergenceAt(twilioForm, '/body/ValidityPeriod')).toMatchObject({ operation: 'CreateMessage POST /2010-04-01/Accounts/{AccountSid}/Messages.json', doc: expect.stringMatching(/integer/), sent: '"soon"' });
    expect(divergenceAt(twilioForm, '/header/i-twilio-idempotency-token')).toBeDefined();

    const vonageSearch = checkRequest({ method: 'GET', url: '/number/search?country=US&features=VOICE%2CSMS&api_key=k&api_secret=s', headers: {}, body: '' });
    expect(divergenceAt(vonageSearch, '/query/features')).toMatchObject({ operation: 'getAvailableNumbers GET /number/search', sent: '"VOICE,SMS"' });
    const vonageNoKey = checkRequest({ method: 'GET', url: '/number/search?country=US', headers: {}, body: '' });
    expect(divergenceAt(vonageNoKey, '/header/authorization')).toMatchObject({ doc: 'api_key in query + api_secret in query, or Authorization: basic' });
    expect(checkRequest({ method: 'GET', url: '/number/search?country=US', headers: { authorization: basic('k', 's') }, body: '' })).toEqual([]);

    const telnyxLimit = checkRequest({ method: 'GET', url: '/v2/available_phone_numbers?filter[limit]=many', headers: bearer, body: '' });
    expect(divergenceAt(telnyxLimit, '/query/filter/limit')).toMatchObject({ sent: '"many"' });
    // filter is deepObject, explode: features (an array) is its key repeated; `[]` is no part of it.
    expect(checkRequest({ method: 'GET', url: '/v2/available_phone_numbers?filter[country_code]=US&filter[features]=sms&filter[features]=voice', headers: bearer, body: '' })).toEqual([]);
    expect(checkRequest({ method: 'GET', url: '/v2/available_phone_numbers?filter[country_code]=US&filter[features]=sms', headers: bearer, body: '' })).toEqual([]);
    const telnyxBrackets = checkRequest({ method: 'GET', url: '/v2/available_phone_numbers?filter[country_code]=US&filter[features][]=sms', headers: bearer, body: '' });
    expect(divergenceAt(telnyxBrackets, '/query/filter/features')).toMatchObject({ doc: expect.stringMatching(/type array/) });

    expect(checkRequest({ method: 'POST', url: '/v2/calls/x/actions/gather', headers: bearer, body: '{}' })).toEqual([
      expect.objectContaining({ operation: 'GatherCall POST /calls/{call_control_id}/actions/gather', field: '/path', doc: expect.stringMatching(/leaves out/) }),
    ]);
    expect(checkRequest({ method: 'POST', url: '/v2/calls/x/actions/teleport', headers: bearer, body: '{}' })).toEqual([
      expect.objectContaining({ field: '/path', doc: 'no such operation' }),
    ]);
  });

  it('answers and webhooks are checked too', () => {
    const dial = { method: 'POST', url: '/v2/calls', headers: bearer, body: JSON.stringify({ connection_id: 'c', to: '+13125550111', from: '+13125550100' }) };
    const answer = { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { call_control_id: 'v3:x', call_leg_id: 'l', call_session_id: 's', record_type: 'call', is_alive: true, client_state: null } }) };
    expect(divergenceAt(checkResponse(dial, answer), '/body/data/client_state')).toMatchObject({ operation: 'response of DialCall POST /calls', doc: expect.stringMatching(/type string/), sent: 'null' });

    const event = { data: { event_type: 'message.finalized', id: '86f58db9-0fe3-4adc-9d1f-46e66e6e9323', occurred_at: '2019-01-23T18:10:02.574Z', record_type: 'event', payload: { id: 'm', from: { line_type: 'long_code', phone_number: '+13125550100' }, to: [] } } };
    const webhook = checkWebhook('telnyx', { method: 'POST', url: '/webhooks/telnyx', headers: { 'telnyx-timestamp': '1', 'telnyx-signature-ed25519': 'x' }, body: JSON.stringify(event) });
    expect(divergenceAt(webhook, '/body/data/payload/from/line_type')).toMatchObject({ operation: 'webhook deliveryUpdate (message.finalized)', sent: '"long_code"' });
  });

  it('a oneOf that two branches match is reported as such (the checker once recursed on it until the stack ran out)', () => {
    const ref = 'https://planted.test/two-branches';
    const { ajv } = carrierDocuments();
    if (!ajv.getSchema(ref)) ajv.addSchema({ $id: ref, oneOf: [{ type: 'object', required: ['a'] }, { type: 'object', required: ['b'] }] });
    expect(checkSchema(ref, { a: 1 }, 'planted', '/body')).toEqual([]);
    expect(checkSchema(ref, { a: 1, b: 2 }, 'planted', '/body')).toEqual([
      { operation: 'planted', field: '/body', doc: expect.stringMatching(/exactly one of its oneOf branches; branches 0 and 1 both match/), sent: '{"a":1,"b":2}' },
    ]);
    // No branch matched: the complaints of the closest one.
    expect(checkSchema(ref, {}, 'planted', '/body')).toEqual([expect.objectContaining({ field: '/body/a', doc: expect.stringMatching(/required property "a"/) })]);
  });
});
