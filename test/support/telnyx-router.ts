import http from 'node:http';
import type { FakeCallControl } from './fake-call-control.js';
import type { FakeCarrier } from './fake-carrier.js';

/**
 * One TELNYX_API_URL, two fakes: `/v2/calls…` goes to the Call Control fake and every other
 * request to the send fake, so each answers as Telnyx documents its own operations.
 *
 *   const router = await telnyxRouter(calls, sends);   // TELNYX_API_URL: `${router.url}/v2`
 */
export async function telnyxRouter(calls: FakeCallControl, sends: FakeCarrier): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const target = (req.url ?? '').startsWith('/v2/calls') ? calls.url : sends.url;
    const forward = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
