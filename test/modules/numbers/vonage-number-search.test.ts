import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiClient } from '../../support/api-client.js';
import { FakeNumberCarrier } from '../../support/fake-number-carrier.js';
import { withTestApp } from '../../support/with-test-app.js';

/**
 * Vonage number search against a fake implementing search_pattern as Vonage documents it
 * (0 starts with the E.164 digits, calling code included; 1 contains; 2 ends with): an area code
 * answers only that area code, `features` goes out as one of the published enum's values, and
 * the request authenticates as Vonage's current reference documents (basic header).
 */
describe('Vonage number search', () => {
  // +15553123000 contains 312 but is not in area code 312: the number the issue saw offered.
  const carrier = new FakeNumberCarrier(['+15553123000', '+13125550801', '+13125557777', '+14153127777']);
  beforeAll(async () => {
    await carrier.start();
  });
  afterAll(async () => {
    await carrier.stop();
  });
  const t = withTestApp({ env: () => ({ ...carrier.env(), API_RATE_LIMIT_PER_MINUTE: '1000000' }) });
  let customer: ApiClient;
  beforeAll(async () => {
    customer = await ApiClient.forNewAccount(t.app);
  });

  const search = async (query: string) => {
    const before = carrier.requests.length;
    const response = await customer.get(`/v2/available_phone_numbers?carrier=vonage&${query}`);
    expect(response.status).toBe(200);
    const [sent] = carrier.requests.slice(before).filter((r) => r.path.startsWith('/number/search'));
    return { numbers: (response.body.data as { phone_number: string }[]).map((n) => n.phone_number), sent, params: new URL(sent.path, carrier.url).searchParams };
  };

  it('an area code answers only that area code: a prefix search with the calling code (pattern=1312, search_pattern=0)', async () => {
    const { numbers, params } = await search('area_code=312');
    expect(numbers.sort()).toEqual(['+13125550801', '+13125557777']);
    expect(params.get('pattern')).toBe('1312');
    expect(params.get('search_pattern')).toBe('0');
  });

  it('an area code with contains: the prefix is searched and contains applied to what comes back', async () => {
    const { numbers, params } = await search('area_code=312&contains=7777');
    expect(numbers).toEqual(['+13125557777']);
    expect(params.get('pattern')).toBe('1312');
    expect(params.get('search_pattern')).toBe('0');
  });

  it('contains alone is a contains search (search_pattern=1)', async () => {
    const { numbers, params } = await search('contains=312');
    expect(numbers.sort()).toEqual(['+13125550801', '+13125557777', '+14153127777', '+15553123000']);
    expect(params.get('search_pattern')).toBe('1');
  });

  it.each([
    ['voice,sms', 'SMS,VOICE'],
    ['sms,voice', 'SMS,VOICE'],
    ['voice', 'VOICE'],
    ['sms', 'SMS'],
  ])('features=%s goes out as the published value %s', async (features, sent) => {
    const { params } = await search(`area_code=312&features=${features}`);
    expect(params.get('features')).toBe(sent);
  });

  it('authenticates with the basic Authorization header, never the secret in the query', async () => {
    const { sent, params } = await search('area_code=312');
    const basic = /^Basic (\S+)$/.exec(String(sent.headers.authorization));
    expect(Buffer.from(basic![1], 'base64').toString()).toBe(`${t.app.config.VONAGE_API_KEY}:${t.app.config.VONAGE_API_SECRET}`);
    expect(params.has('api_key')).toBe(false);
    expect(params.has('api_secret')).toBe(false);
    expect(params.get('country')).toBe('US');
  });
});
