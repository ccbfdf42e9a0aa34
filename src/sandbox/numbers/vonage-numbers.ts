import type { SandboxContext, SandboxRequest } from '../sandbox-context.js';
import { header, sendJson } from '../sandbox-http.js';

const PATHS = new Set(['/number/search', '/account/numbers', '/number/buy', '/number/update', '/number/cancel']);

export function isVonageNumbersPath(path: string): boolean {
  return PATHS.has(path);
}

const answer = (code: string, label: string) => ({ 'error-code': code, 'error-code-label': label });

/** The published values of /number/search `features`. */
const FEATURES = new Set(['SMS', 'VOICE', 'SMS,VOICE', 'MMS', 'SMS,MMS', 'VOICE,MMS', 'SMS,MMS,VOICE']);

/** A `pattern` matcher by search_pattern: 0 starts with (the E.164 digits, calling code included; the default), 1 contains, 2 ends with. */
function patternMatch(query: URLSearchParams): (digits: string) => boolean {
  const pattern = query.get('pattern');
  if (!pattern) return () => true;
  const strategy = query.get('search_pattern') ?? '0';
  if (strategy === '1') return (d) => d.includes(pattern);
  if (strategy === '2') return (d) => d.endsWith(pattern);
  return (d) => d.startsWith(pattern);
}

/**
 * Vonage numbers, as its Numbers API reference describes them: GET /number/search (pattern and
 * search_pattern 0/1/2, features from the published values), GET /account/numbers, POST
 * /number/buy, /number/update (app_id), /number/cancel. Authentication: the basic header the
 * current reference documents, or api_key/api_secret query parameters as the 2021 description has them.
 */
export function vonageNumbersRoute(ctx: SandboxContext, { req, res, body }: SandboxRequest, path: string, query: URLSearchParams): void {
  const numbers = ctx.numbers;
  const auth = Buffer.from(`${ctx.config.VONAGE_API_KEY}:${ctx.config.VONAGE_API_SECRET}`).toString('base64');
  const byQuery = query.get('api_key') === ctx.config.VONAGE_API_KEY && query.get('api_secret') === ctx.config.VONAGE_API_SECRET;
  if (header(req, 'authorization') !== `Basic ${auth}` && !byQuery) return sendJson(res, 401, answer('401', 'authentication failed'));
  const form = new URLSearchParams(body);
  const msisdn = form.get('msisdn') ?? '';
  const match = patternMatch(query);
  if (req.method === 'GET' && path === '/number/search') {
    const features = query.get('features');
    if (features !== null && !FEATURES.has(features)) return sendJson(res, 400, answer('400', `features must be one of ${[...FEATURES].join(' | ')}`));
    const pattern = query.get('pattern') ?? '';
    // The inventory is US (+1): a prefix search names its area code after the 1.
    const prefixArea = (query.get('search_pattern') ?? '0') === '0' && /^1\d{3}/.test(pattern) ? pattern.slice(1, 4) : undefined;
    const offered = numbers.offer(Math.min(100, Number(query.get('size') ?? 10)), prefixArea, match);
    return sendJson(res, 200, { count: offered.length, numbers: offered.map((n) => ({ country: query.get('country') ?? 'US', msisdn: n.slice(1), type: 'mobile-lvn', cost: '0.90', features: ['VOICE', 'SMS'] })) });
  }
  if (req.method === 'GET' && path === '/account/numbers') {
    const held = numbers.heldBy('vonage', (n) => match(n.slice(1)));
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
