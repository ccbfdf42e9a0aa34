import type { IncomingMessage, ServerResponse } from 'node:http';

/** Bodies larger than this are refused: the sandbox only ever receives small JSON and forms. */
const MAX_BODY_BYTES = 64 * 1024;

export class BodyTooLarge extends Error {}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLarge(`body over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** An error of the sandbox's own control endpoints (not a carrier's). */
export function problem(res: ServerResponse, status: number, detail: string): void {
  sendJson(res, status, { errors: [{ code: status === 404 ? 'not_found' : 'invalid_request', title: 'Sandbox', detail }] });
}

export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A URL path segment decoded (`v3%3A…` → `v3:…`), as it came when it does not decode. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** `Idempotency-Key` (Telnyx) or `I-Twilio-Idempotency-Token`, quotes removed. */
export function idempotencyKey(req: IncomingMessage): string | undefined {
  const raw = header(req, 'idempotency-key') ?? header(req, 'i-twilio-idempotency-token');
  const key = raw?.trim().replace(/^"(.*)"$/, '$1');
  return key ? key : undefined;
}
