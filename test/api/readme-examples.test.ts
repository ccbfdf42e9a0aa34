import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { NpmStart } from '../support/npm-start.js';
import { freePort } from '../support/ports.js';
import { ROOT } from '../support/run-node.js';

/** Where the copy-paste API examples live (README links to it). */
const EXAMPLES_PAGE = 'docs/api-by-example.md';

/** The shell blocks of the examples page, read from the page itself, in order. */
function readmeExamples(page: string): string[] {
  const start = page.indexOf('<!-- readme-examples:start -->');
  const end = page.indexOf('<!-- readme-examples:end -->');
  if (start < 0 || end < start) throw new Error(`${EXAMPLES_PAGE} has no readme-examples section`);
  return [...page.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/**
 * Every example of docs/api-by-example.md runs as written (a user copying it into a shell in the repository)
 * against `npm start`, on a database of its own; only the ports are this test's.
 */
describe('docs/api-by-example.md: API by example', () => {
  let app: NpmStart;
  beforeAll(async () => {
    app = await NpmStart.start();
  }, 180_000);
  afterAll(async () => {
    await app?.destroy();
    for (const file of ['webhooks.log', 'invoice-paid.json']) rmSync(join(ROOT, file), { force: true });
  });

  it('every block runs, in order, with exit 0: a delivered SMS, a verified webhook, a rung-through call, a granted bundle', async () => {
    const blocks = readmeExamples(readFileSync(join(ROOT, EXAMPLES_PAGE), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(8); // account, numbers, receiver, SMS, voice, billing, events, operations
    const script = blocks.join('\n');
    // every customer route has its example
    for (const route of ['/v2/account', '/v2/api_keys', '/v2/phone_numbers', '/v2/messages', '/v2/webhook_endpoints', '/v2/events', '/v2/calls', '/v2/usage', '/v2/entitlements', '/v2/balances', '/webhooks/billing/stripe']) {
      expect(script).toContain(route);
    }
    const receiverPort = await freePort();
    const ours = script
      .replaceAll('127.0.0.1:3000', `127.0.0.1:${app.port}`)
      .replaceAll('127.0.0.1:3100', `127.0.0.1:${app.sandboxPort}`)
      .replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`)
      .replaceAll('webhook-receiver.mjs 4000', `webhook-receiver.mjs ${receiverPort}`);
    const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
      // Its own process group: the receiver it starts in the background goes with it, whatever happens.
      const child = spawn('bash', ['-c', `set -euo pipefail\n${ours}`], { cwd: ROOT, env: app.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 200_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // the group is gone
        }
        resolve({ code, output });
      });
    });
    if (run.code !== 0) throw new Error(`${EXAMPLES_PAGE} examples exited ${run.code}:\n${run.output.slice(-4000)}`);
    expect(run.output).toContain('"status":"delivered"');
    expect(run.output).toMatch(/verified message\.delivered evt_/);
    expect(run.output).toMatch(/"direction":"inbound"[^}]*"status":"completed"/);
    expect(run.output).toContain('"outcome":"applied"');
    expect(run.output).not.toContain('REFUSED');
  }, 300_000);
});
