import type http from 'node:http';
import { checkRequest } from './check-request.js';
import { checkResponse } from './check-response.js';
import { ContractDivergenceError, type Divergence } from './divergence.js';
import type { ObservedRequest, ObservedResponse } from './exchange.js';
import { findOperation } from './operations.js';

/**
 * Collects the divergences of every exchange a carrier fake saw: each request our app sent
 * (checkRequest) and the answer the fake gave (checkResponse: a fake must answer as the carrier
 * documents, or the app is tested against a carrier that does not exist).
 */
export class ContractRecorder {
  readonly divergences: Divergence[] = [];
  /** The documented operations the exchanges called (`SendMessage POST /messages`): what the tier proves it covered. */
  readonly exercised = new Set<string>();

  constructor(private readonly where: string) {}

  record(request: ObservedRequest, response?: ObservedResponse): void {
    const lookup = findOperation(request.method, new URL(request.url, 'http://carrier').pathname);
    if ('found' in lookup) this.exercised.add(lookup.found.name);
    this.divergences.push(...checkRequest(request));
    if (response) this.divergences.push(...checkResponse(request, response));
  }

  /**
   * Hooks one exchange of an http server: reads the request body beside the handler (both get
   * every chunk), captures what the handler writes, and records the exchange once the answer has
   * been written, or the request alone when the connection was cut before an answer.
   */
  observe(req: http.IncomingMessage, res: http.ServerResponse): void {
    // The URL as sent: a server may rewrite req.url for its handler (LocalCarrierServer's /vonage root).
    const url = req.url ?? '/';
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(Buffer.from(c)));
    const written: Buffer[] = [];
    const write = res.write.bind(res) as (...args: any[]) => boolean;
    const end = res.end.bind(res) as (...args: any[]) => http.ServerResponse;
    const keep = (chunk: unknown) => {
      if (typeof chunk === 'string' || chunk instanceof Uint8Array) written.push(Buffer.from(chunk as string));
    };
    res.write = ((chunk: unknown, ...rest: unknown[]) => (keep(chunk), write(chunk, ...rest))) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => (typeof chunk !== 'function' && keep(chunk), end(chunk, ...rest))) as typeof res.end;
    const headersWritten: Record<string, string> = {};
    const writeHead = res.writeHead.bind(res) as (...args: any[]) => http.ServerResponse;
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      const given = rest.find((r) => r && typeof r === 'object') as Record<string, unknown> | undefined;
      for (const [k, v] of Object.entries(given ?? {})) headersWritten[k.toLowerCase()] = String(v);
      return writeHead(status, ...rest);
    }) as typeof res.writeHead;
    let done = false;
    const finish = (answered: boolean) => {
      if (done) return;
      done = true;
      const request = { method: req.method ?? 'GET', url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const headers = { ...Object.fromEntries(Object.entries(res.getHeaders()).map(([k, v]) => [k, String(v)])), ...headersWritten };
      try {
        this.record(request, answered ? { status: res.statusCode, headers, body: Buffer.concat(written).toString('utf8') } : undefined);
      } catch (err) {
        this.divergences.push({ operation: `${request.method} ${request.url}`, field: '/', doc: 'a request the checker can read', sent: `(checker failed: ${(err as Error).message})` });
      }
    };
    res.on('finish', () => finish(true));
    res.on('close', () => finish(res.writableFinished));
  }

  /** Throws ContractDivergenceError (naming operation, field, document and what was sent) when any exchange diverged. */
  expectNoDivergences(): void {
    if (this.divergences.length > 0) throw new ContractDivergenceError(this.divergences, this.where);
  }

  /** Forget what was recorded (a test that planted divergences on purpose, after reading them). */
  clear(): Divergence[] {
    return this.divergences.splice(0);
  }
}
