import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './wait.js';

export interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

export interface WebhookReceiver {
  /** http://127.0.0.1:<port> */
  url: string;
  requests: ReceivedRequest[];
  /** Responses for the next requests, in order; after they run out every request gets `fallback`. */
  script(...responses: ScriptedResponse[]): void;
  /** The answer once the script is used up (200 by default). */
  fallback: ScriptedResponse;
  /** Requests whose webhook-id header is `id`. */
  requestsFor(id: string): ReceivedRequest[];
  waitForRequests(n: number, filter?: (r: ReceivedRequest) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 playing a customer's webhook endpoint, with scripted answers. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const queue: ScriptedResponse[] = [];
  const requests: ReceivedRequest[] = [];
  const receiver: Partial<WebhookReceiver> = { requests, fallback: { status: 200, body: 'ok' } };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const answer = queue.shift() ?? receiver.fallback!;
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}`,
    script: (...responses: ScriptedResponse[]) => void queue.push(...responses),
    requestsFor: (id: string) => requests.filter((r) => r.headers['webhook-id'] === id),
    waitForRequests: (n: number, filter: (r: ReceivedRequest) => boolean = () => true, timeoutMs = 20000) =>
      waitFor(() => requests.filter(filter), (rs) => rs.length >= n, { timeoutMs, what: `${n} webhook requests` }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as WebhookReceiver;
}
