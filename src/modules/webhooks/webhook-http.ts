import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { VettedAddress } from './address-policy.js';

/** Response bytes read at most; the rest is not waited for. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface PostResult {
  statusCode?: number;
  retryAfter?: string;
  /** Up to MAX_RESPONSE_BYTES of the body, as text. */
  body: string;
  error?: string;
  durationMs: number;
}

export interface PostRequest {
  url: URL;
  /** The address the SSRF guard approved: the socket connects here, never to a fresh lookup. */
  address: VettedAddress;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

/** Idle keep-alive sockets close after this: under the 5 s most servers (Node's default) keep them. */
const IDLE_SOCKET_MS = 4000;
/** Agents kept at most: one per (scheme, host, vetted address, port) recently called. */
const MAX_AGENTS = 256;

/**
 * Keep-alive connections for customer endpoints, one agent per vetted address: a socket is only
 * ever reused for the address the SSRF guard approved when it was opened (the key includes it),
 * so pinning holds while a busy endpoint is spared a TCP (and TLS) handshake per attempt.
 */
export class EndpointAgents {
  private readonly agents = new Map<string, http.Agent>();

  for(url: URL, address: VettedAddress): http.Agent {
    const key = `${url.protocol}//${url.hostname}|${address.address}|${url.port}`;
    const known = this.agents.get(key);
    if (known) {
      // most recently used last, so the first entry is the one to let go
      this.agents.delete(key);
      this.agents.set(key, known);
      return known;
    }
    const options = { keepAlive: true, timeout: IDLE_SOCKET_MS, maxSockets: 64, maxFreeSockets: 16 };
    const agent = url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    this.agents.set(key, agent);
    if (this.agents.size > MAX_AGENTS) {
      const [oldestKey, oldest] = this.agents.entries().next().value as [string, http.Agent];
      this.agents.delete(oldestKey);
      oldest.destroy();
    }
    return agent;
  }

  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

/**
 * One POST, no redirects followed (a 3xx is just a non-2xx answer), one deadline for connect, send
 * and read. Never throws: network failures come back as `error`. With an agent (EndpointAgents)
 * the connection is kept for the next attempt; a kept connection the server had already closed
 * (reset before any answer) is retried once on a new one, as Node's docs advise.
 */
export function postWebhook(request: PostRequest, agent?: http.Agent): Promise<PostResult> {
  const started = performance.now();
  return send(request, agent, started, request.timeoutMs).then((outcome) =>
    outcome === 'stale-socket' ? send(request, agent, started, request.timeoutMs - (performance.now() - started)).then((again) => again as PostResult) : outcome,
  );
}

function send(request: PostRequest, agent: http.Agent | undefined, started: number, timeoutMs: number): Promise<PostResult | 'stale-socket'> {
  const pinned: LookupFunction = (_host, options, callback) => {
    const cb = callback as (...args: unknown[]) => void;
    if ((options as { all?: boolean }).all) cb(null, [{ address: request.address.address, family: request.address.family }]);
    else cb(null, request.address.address, request.address.family);
  };
  const client = request.url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const chunks: Buffer[] = [];
    let received = 0;
    let statusCode: number | undefined;
    let retryAfter: string | undefined;
    /** `keep`: the answer was read to its end, so the connection may serve the next attempt. */
    const finish = (error?: string, keep = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (!keep) req.destroy();
      // Text as PostgreSQL can store it: invalid UTF-8 decodes to U+FFFD, and so does NUL, which
      // text cannot hold (an excerpt with one made the attempt's record fail, and the event was sent again).
      const body = Buffer.concat(chunks).toString('utf8').replaceAll('\u0000', '\uFFFD');
      resolve({ statusCode, retryAfter, body, error, durationMs: Math.round(performance.now() - started) });
    };
    const req = client.request(
      request.url,
      {
        method: 'POST',
        lookup: pinned,
        agent: agent ?? false,
        headers: {
          ...request.headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(request.body)),
          'user-agent': 'Onceline-Webhooks/1',
        },
      },
      (res) => {
        statusCode = res.statusCode;
        const ra = res.headers['retry-after'];
        retryAfter = Array.isArray(ra) ? ra[0] : ra;
        res.on('data', (chunk: Buffer) => {
          const room = MAX_RESPONSE_BYTES - received;
          if (room > 0) chunks.push(chunk.subarray(0, room));
          received += chunk.length;
          if (received >= MAX_RESPONSE_BYTES) finish();
        });
        res.on('end', () => finish(undefined, true));
        res.on('error', (err) => finish(statusCode ? undefined : err.message));
      },
    );
    const deadline = setTimeout(() => finish(statusCode ? undefined : `timed out after ${request.timeoutMs} ms`), Math.max(1, timeoutMs));
    req.on('error', (err) => {
      const code = (err as { code?: string }).code;
      if (!settled && req.reusedSocket && statusCode === undefined && (code === 'ECONNRESET' || code === 'EPIPE')) {
        settled = true;
        clearTimeout(deadline);
        resolve('stale-socket');
        return;
      }
      finish(`${code ?? 'error'}: ${err.message}`);
    });
    req.end(request.body);
  });
}
