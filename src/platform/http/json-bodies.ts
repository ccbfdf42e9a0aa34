import type { FastifyInstance } from 'fastify';
import { defaultError } from './problem.js';

/** The customer API's routes: every body they take is JSON. */
const JSON_API_PREFIX = '/v2/';

/** `application/json` or a `+json` type, parameters (charset) aside. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * A body sent to the customer API under any other type (curl's `-d` alone says
 * application/x-www-form-urlencoded) is answered 415 naming the type it takes, before any parser
 * reads it: a JSON text parsed as a form would come back as a puzzling validation error.
 * Carrier webhooks (forms, TwiML callbacks) are outside /v2 and keep their own types.
 */
export function refuseNonJsonBodies(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith(JSON_API_PREFIX)) return;
    const hasBody = Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
    if (!hasBody || isJsonMediaType(request.headers['content-type'])) return;
    const [code, title] = defaultError(415);
    const given = request.headers['content-type'] ? 'another type' : 'no Content-Type';
    return reply
      .code(415)
      .type('application/json')
      .send({ errors: [{ code, title, detail: `This route takes a JSON body: send it with Content-Type: application/json (the request had ${given})`, source: { header: 'Content-Type' } }] });
  });
}
