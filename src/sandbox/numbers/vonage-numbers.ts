import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, sendJson } from '../sandbox-http.js';

const PATHS = new Set(['/number/search', '/account/numbers', '/number/buy', '/number/update', '/number/cancel']);

export function isVonageNumbersPath(path: string): boolean {
  return PATHS.has(path);
}

const answer = (code: string, label: string) => ({ 'error-code': code, 'error-code-label': label });

/** Vonage numbers: GET /number/search, GET /account/numbers, POST /number/buy, /number/update (app_id), /number/cancel. */
export function vonageNumbersRoute(ctx: SandboxContext, { req, res, body }: SandboxRequest, path: string, query: URLSearchParams): void {
  const numbers = ctx.numbers;
  const auth = Buffer.from(`${ctx.config.VONAGE_API_KEY}:${ctx.config.VONAGE_API_SECRET}`).toString('base64');
  if (header(req, 'authorization') !== `Basic ${auth}`) return sendJson(res, 401, answer('401', 'authentication failed'));
  const form = new URLSearchParams(body);
  const msisdn = form.get('msisdn') ?? '';
  if (req.method === 'GET' && path === '/number/search') {
    const offered = numbers.offer(Number(query.get('size') ?? 10), undefined, query.get('pattern') ?? undefined);
    return sendJson(res, 200, { count: offered.length, numbers: offered.map((n) => ({ country: query.get('country') ?? 'US', msisdn: n.slice(1), type: 'mobile-lvn', cost: '0.90', features: ['VOICE', 'SMS'] })) });
  }
  if (req.method === 'GET' && path === '/account/numbers') {
    const pattern = query.get('pattern');
    const held = numbers.heldBy('vonage').filter(([n]) => !pattern || n.slice(1).startsWith(pattern));
    return sendJson(res, 200, { count: held.length, numbers: held.map(([n, h]) => ({ country: 'US', msisdn: n.slice(1), type: 'mobile-lvn', features: ['VOICE', 'SMS'], ...h.config })) });
  }
  if (req.method === 'POST' && path === '/number/buy') {
    const bought = numbers.buy('vonage', `+${msisdn}`, {});
    if (numbers.loseAnswer()) return void res.socket?.destroy();
    return bought ? sendJson(res, 200, answer('200', 'success')) : sendJson(res, 420, answer('420', 'method failed'));
  }
  const held = numbers.held.get(`+${msisdn}`);
  if (req.method === 'POST' && path === '/number/update') {
    if (!held || held.carrier !== 'vonage') return sendJson(res, 420, answer('420', 'method failed'));
    held.config.app_id = form.get('app_id') ?? '';
    return sendJson(res, 200, answer('200', 'success'));
  }
  if (req.method === 'POST' && path === '/number/cancel') {
    return numbers.release('vonage', msisdn) ? sendJson(res, 200, answer('200', 'success')) : sendJson(res, 420, answer('420', 'method failed'));
  }
  sendJson(res, 404, answer('404', `no sandbox route ${req.method} ${path}`));
}
