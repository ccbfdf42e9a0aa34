import type { FastifyRequest } from 'fastify';
import type { InboundWebhook } from './carrier-adapter.js';

/** A webhook request as our HTTP layer gives it to a controller: the parsed body and the exact bytes. */
export type RawRequest = FastifyRequest & { rawBody?: Buffer };

/** What an adapter verifies: the exact bytes, headers, URL and the socket's peer. */
export function inboundWebhook(req: RawRequest, channel?: InboundWebhook['channel']): InboundWebhook {
  // The socket's peer, never X-Forwarded-For: a header proves nothing about where a request came from.
  return { rawBody: req.rawBody ?? Buffer.alloc(0), body: req.body, headers: req.headers, url: req.url, channel, peerAddress: req.socket.remoteAddress };
}
