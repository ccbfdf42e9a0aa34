import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** A peer's address (a socket's remoteAddress) is this machine: 127.0.0.0/8, ::1 or ::ffff:127.x. */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return LOOPBACK.check(address, 'ipv4');
  // ::ffff:127.0.0.1 is IPv4 loopback written as IPv6.
  if (family === 6) return LOOPBACK.check(address, 'ipv6') || /^::ffff:127\./i.test(address);
  return false;
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return undefined;
  }
}

/** Without DNS: is this URL's host a loopback literal or `localhost`? (Config getters cannot await.) */
export function isLoopbackUrl(url: string): boolean {
  const host = hostOf(url);
  return host !== undefined && (host === 'localhost' || isLoopbackAddress(host));
}

/**
 * Why the sandbox may not send to `url`, or undefined when every address its host resolves to is
 * loopback. The sandbox fires duplicated, re-signed traffic on purpose: it must not reach anything
 * but this machine unless SANDBOX_ALLOW_REMOTE=1 says so.
 */
export async function nonLoopbackProblem(url: string): Promise<string | undefined> {
  const host = hostOf(url);
  if (!host) return `${url} is not an absolute URL`;
  if (isIP(host)) return isLoopbackAddress(host) ? undefined : `${host} is not a loopback address`;
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch (err) {
    return `${host} does not resolve (${(err as Error).message})`;
  }
  const outside = addresses.filter((a) => !isLoopbackAddress(a.address)).map((a) => a.address);
  return outside.length === 0 ? undefined : `${host} resolves to ${outside.join(', ')}, not loopback`;
}
