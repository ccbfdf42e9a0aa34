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

/**
 * One POST, no redirects followed (a 3xx is just a non-2xx answer), one deadline for connect, send
 * and read. Never throws: network failures come back as `error`.
 */
export function postWebhook(request: PostRequest): Promise<PostResult> {
  const started = performance.now();
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
    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      req.destroy();
      resolve({ statusCode, retryAfter, body: Buffer.concat(chunks).toString('utf8'), error, durationMs: Math.round(performance.now() - started) });
    };
    const req = client.request(
      request.url,
      {
        method: 'POST',
        lookup: pinned,
        agent: false,
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
        res.on('end', () => finish());
        res.on('error', (err) => finish(statusCode ? undefined : err.message));
      },
    );
    const deadline = setTimeout(() => finish(statusCode ? undefined : `timed out after ${request.timeoutMs} ms`), request.timeoutMs);
    req.on('error', (err) => finish(`${(err as { code?: string }).code ?? 'error'}: ${err.message}`));
    req.end(request.body);
  });
}
