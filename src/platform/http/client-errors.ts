import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { defaultError } from './problem.js';

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers or URL over 16 KiB,
 * malformed HTTP, a slow client): the same `{"errors":[...]}` body as every other error,
 * where Fastify's default would answer its own shape. Then the socket closes, as Node does.
 */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const status = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const [code, title] = defaultError(status);
  const body = JSON.stringify({ errors: [{ code, title }] });
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${title}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(err);
}

/**
 * Fastify's router refusing a URL before any route or hook runs (malformed percent-encoding: 400;
 * a path parameter over its length limit: 414). These bypass Nest's exception filter, so they
 * get the errors[] body here, and never echo the URL back. Replaces Nest's own handler, which
 * only adds the headers of `app.useSecurityHeaders()` (not used here).
 */
export function answerFrameworkError(error: Error & { statusCode?: number }, _request: FastifyRequest, reply: FastifyReply): void {
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
  const [code, title] = defaultError(status);
  void reply.code(status).type('application/json').send({ errors: [{ code, title }] });
}
