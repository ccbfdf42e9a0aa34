import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Ranges a customer endpoint must not reach (RFC 6890 special-purpose and friends), IPv4 and IPv6. */
const FORBIDDEN: Array<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified / "this network"'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.88.99.0', 24, 'ipv4', 'reserved (6to4 relay)'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['64:ff9b::', 96, 'ipv6', 'NAT64'],
  ['64:ff9b:1::', 48, 'ipv6', 'NAT64 (local use)'],
  ['100::', 64, 'ipv6', 'discard-only'],
  ['2001::', 32, 'ipv6', 'Teredo'],
  ['2001:2::', 48, 'ipv6', 'benchmarking'],
  ['2001:10::', 28, 'ipv6', 'reserved (ORCHID)'],
  ['2001:20::', 28, 'ipv6', 'reserved (ORCHIDv2)'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['2002::', 16, 'ipv6', '6to4'],
  ['3fff::', 20, 'ipv6', 'documentation'],
  ['fc00::', 7, 'ipv6', 'unique local (private)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local (deprecated)'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

export interface VettedAddress {
  address: string;
  family: 4 | 6;
}

/** Why an endpoint may not be called; recorded on the attempt as its error. */
export class AddressRefused extends Error {}

type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;
const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/**
 * The SSRF guard. Every address a host resolves to must be public or inside WEBHOOK_ALLOWED_CIDRS
 * (one bad record refuses the host: DNS rebinding answers mix them). The caller connects to the
 * vetted address itself, so no second lookup can swap it.
 */
export class AddressPolicy {
  private readonly forbidden = FORBIDDEN.map(([net, prefix, type, reason]) => {
    const list = new BlockList();
    list.addSubnet(net, prefix, type);
    return { list, label: `${reason} range ${net}/${prefix}` };
  });
  private readonly allowed = new BlockList();

  constructor(allowedCidrs: string, private readonly resolve: Resolver = systemResolver) {
    for (const cidr of allowedCidrs.split(',').map((c) => c.trim()).filter(Boolean)) {
      const [net, prefixText] = cidr.split('/');
      const type = isIP(net) === 6 ? 'ipv6' : isIP(net) === 4 ? 'ipv4' : undefined;
      const widest = type === 'ipv6' ? 128 : 32;
      // Digits only: Number('') is 0, and "10.0.0.0/" read as /0 would allow every address.
      const prefix = prefixText === undefined ? widest : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
      if (!type || !Number.isInteger(prefix) || prefix > widest) throw new Error(`WEBHOOK_ALLOWED_CIDRS: "${cidr}" is not a CIDR`);
      this.allowed.addSubnet(net, prefix, type);
    }
  }

  /** Undefined when the address may be called, else the reason it may not. */
  refusalFor(address: string): string | undefined {
    const plain = unmapIpv4(address);
    const type = isIP(plain) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowed.check(plain, type)) return undefined;
    const hit = this.forbidden.find((f) => f.list.check(plain, type));
    return hit ? `address ${address} is in the ${hit.label} and not in WEBHOOK_ALLOWED_CIDRS` : undefined;
  }

  /** Resolves the host now and returns the address to connect to, or throws AddressRefused. */
  async vet(hostname: string): Promise<VettedAddress> {
    const host = stripBrackets(hostname);
    let addresses: Array<{ address: string; family: number }>;
    if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
    else {
      try {
        addresses = await this.resolve(host);
      } catch (err) {
        throw new AddressRefused(`cannot resolve ${host}: ${(err as { code?: string }).code ?? (err as Error).message}`);
      }
    }
    if (addresses.length === 0) throw new AddressRefused(`cannot resolve ${host}: no address`);
    for (const { address } of addresses) {
      const refusal = this.refusalFor(address);
      if (refusal) throw new AddressRefused(`refused: ${host} resolves to ${refusal}`);
    }
    return { address: addresses[0].address, family: addresses[0].family === 6 ? 6 : 4 };
  }

  /** At endpoint creation: a literal IP (or localhost) that could never be called is refused at once. */
  literalRefusal(hostname: string): string | undefined {
    const host = stripBrackets(hostname).toLowerCase();
    if (host === 'localhost' || host.endsWith('.localhost')) return this.refusalFor('127.0.0.1') && `host ${host} is loopback and not in WEBHOOK_ALLOWED_CIDRS`;
    return isIP(host) ? this.refusalFor(host) : undefined;
  }
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** ::ffff:10.0.0.1 is 10.0.0.1 on the wire: judge it as IPv4. */
function unmapIpv4(address: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (m) return m[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const hi = parseInt(hex[1], 16);
    const lo = parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return address;
}
