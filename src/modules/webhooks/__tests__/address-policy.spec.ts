import { describe, expect, it } from '@jest/globals';
import { AddressPolicy, AddressRefused } from '../address-policy.js';

/**
 * The pure parts of the SSRF guard: the allow-list (WEBHOOK_ALLOWED_CIDRS), range checks and
 * literal hosts. Resolution goes through an injected resolver: no DNS here. The forbidden ranges
 * one by one are covered in test/webhooks-ssrf.test.ts.
 */
const noDns = async (): Promise<never> => {
  throw new Error('DNS must not be used for a literal address');
};

describe('WEBHOOK_ALLOWED_CIDRS', () => {
  it('empty: every special range is refused, public addresses pass', () => {
    const policy = new AddressPolicy('');
    expect(policy.refusalFor('10.1.2.3')).toContain('private range 10.0.0.0/8');
    expect(policy.refusalFor('8.8.8.8')).toBeUndefined();
  });

  it('opens a range to its exact bounds', () => {
    const policy = new AddressPolicy('10.1.0.0/16');
    expect(policy.refusalFor('10.1.0.0')).toBeUndefined();
    expect(policy.refusalFor('10.1.255.255')).toBeUndefined();
    expect(policy.refusalFor('10.0.255.255')).toContain('private');
    expect(policy.refusalFor('10.2.0.0')).toContain('private');
  });

  it('an address without a prefix is a single host (/32, /128)', () => {
    const policy = new AddressPolicy('192.168.1.10, fd00::10');
    expect(policy.refusalFor('192.168.1.10')).toBeUndefined();
    expect(policy.refusalFor('192.168.1.11')).toContain('private');
    expect(policy.refusalFor('fd00::10')).toBeUndefined();
    expect(policy.refusalFor('fd00::11')).toContain('unique local');
  });

  it('reads a comma-separated list with spaces and empty items', () => {
    const policy = new AddressPolicy(' 127.0.0.0/8 ,, ::1/128 ,');
    expect(policy.refusalFor('127.0.0.1')).toBeUndefined();
    expect(policy.refusalFor('::1')).toBeUndefined();
    expect(policy.refusalFor('172.16.0.1')).toContain('private');
  });

  it('an IPv4 range covers the IPv4-mapped IPv6 forms of its addresses', () => {
    const policy = new AddressPolicy('10.0.0.0/8');
    expect(policy.refusalFor('::ffff:10.9.8.7')).toBeUndefined();
    expect(policy.refusalFor('::ffff:a09:807')).toBeUndefined();
    expect(policy.refusalFor('::FFFF:127.0.0.1')).toContain('loopback');
  });

  it('an IPv4 range does not open IPv6 ranges, nor the reverse', () => {
    expect(new AddressPolicy('127.0.0.0/8').refusalFor('::1')).toContain('loopback');
    expect(new AddressPolicy('::1/128').refusalFor('127.0.0.1')).toContain('loopback');
  });

  it.each(['not-a-cidr', '10.0.0/8', '10.0.0.0/abc', '10.0.0.0/8.5', 'example.com/24', '/8'])('refuses %j at start-up, naming the variable', (cidr) => {
    expect(() => new AddressPolicy(cidr)).toThrow(/WEBHOOK_ALLOWED_CIDRS: ".*" is not a CIDR/);
  });

  it('refuses an out-of-range prefix at start-up', () => {
    expect(() => new AddressPolicy('10.0.0.0/33')).toThrow();
    expect(() => new AddressPolicy('fd00::/129')).toThrow();
  });

  it.each(['10.0.0.0/', 'fd00::/', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/+8', '10.0.0.0/ 8'])('refuses %j by name (an empty prefix once read as /0 and allowed every address)', (cidr) => {
    expect(() => new AddressPolicy(cidr)).toThrow(/WEBHOOK_ALLOWED_CIDRS: ".*" is not a CIDR/);
  });
});

describe('refusalFor', () => {
  const policy = new AddressPolicy('');

  it('names the range and the way out', () => {
    expect(policy.refusalFor('169.254.169.254')).toBe('address 169.254.169.254 is in the link-local range 169.254.0.0/16 and not in WEBHOOK_ALLOWED_CIDRS');
  });

  it('judges IPv4-mapped IPv6 as the IPv4 address it is', () => {
    expect(policy.refusalFor('::ffff:169.254.169.254')).toContain('link-local');
    expect(policy.refusalFor('::ffff:a9fe:a9fe')).toContain('link-local');
    expect(policy.refusalFor('::ffff:808:808')).toBeUndefined();
  });

  it('range edges: the address just outside a forbidden range passes', () => {
    expect(policy.refusalFor('172.15.255.255')).toBeUndefined();
    expect(policy.refusalFor('172.16.0.0')).toContain('private');
    expect(policy.refusalFor('172.31.255.255')).toContain('private');
    expect(policy.refusalFor('172.32.0.0')).toBeUndefined();
    expect(policy.refusalFor('100.63.255.255')).toBeUndefined();
    expect(policy.refusalFor('100.127.255.255')).toContain('carrier-grade NAT');
    expect(policy.refusalFor('100.128.0.0')).toBeUndefined();
  });
});

describe('literalRefusal (at endpoint creation)', () => {
  const policy = new AddressPolicy('');

  it('refuses localhost and *.localhost in any case', () => {
    for (const host of ['localhost', 'LOCALHOST', 'api.localhost']) expect(policy.literalRefusal(host)).toContain('loopback');
  });

  it('refuses forbidden IP literals, bracketed IPv6 included', () => {
    expect(policy.literalRefusal('10.0.0.1')).toContain('private');
    expect(policy.literalRefusal('[::1]')).toContain('loopback');
    expect(policy.literalRefusal('[FE80::1]')).toContain('link-local');
  });

  it('leaves names (resolved later) and public literals alone', () => {
    expect(policy.literalRefusal('hooks.example.com')).toBeUndefined();
    expect(policy.literalRefusal('93.184.215.14')).toBeUndefined();
    expect(policy.literalRefusal('[2606:4700:4700::1111]')).toBeUndefined();
  });

  it('lets localhost through once loopback is allowed', () => {
    expect(new AddressPolicy('127.0.0.0/8').literalRefusal('localhost')).toBeUndefined();
  });
});

describe('vet, with an injected resolver', () => {
  it('a literal address is judged without resolving', async () => {
    const policy = new AddressPolicy('', noDns);
    await expect(policy.vet('93.184.215.14')).resolves.toEqual({ address: '93.184.215.14', family: 4 });
    await expect(policy.vet('[2606:4700:4700::1111]')).resolves.toEqual({ address: '2606:4700:4700::1111', family: 6 });
    await expect(policy.vet('127.0.0.1')).rejects.toThrow(AddressRefused);
  });

  it('returns the first answer when every answer is public', async () => {
    const policy = new AddressPolicy('', async () => [{ address: '2606:4700::1', family: 6 }, { address: '1.1.1.1', family: 4 }]);
    await expect(policy.vet('hooks.example.com')).resolves.toEqual({ address: '2606:4700::1', family: 6 });
  });

  it('one forbidden answer refuses the host, whatever its position', async () => {
    const policy = new AddressPolicy('', async () => [{ address: '1.1.1.1', family: 4 }, { address: 'fd00::1', family: 6 }]);
    await expect(policy.vet('hooks.example.com')).rejects.toThrow(/^refused: hooks.example.com resolves to address fd00::1 is in the unique local/);
  });

  it('a resolver failure or an empty answer is a refusal, not a crash', async () => {
    const failing = new AddressPolicy('', async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    });
    await expect(failing.vet('nowhere.example')).rejects.toThrow(new AddressRefused('cannot resolve nowhere.example: ENOTFOUND'));
    const empty = new AddressPolicy('', async () => []);
    await expect(empty.vet('empty.example')).rejects.toThrow(new AddressRefused('cannot resolve empty.example: no address'));
  });
});
