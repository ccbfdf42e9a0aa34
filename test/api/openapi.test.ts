import { beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { committed, DESCRIPTION_FILE, REDOCLY_CLI, REDOCLY_ENV, renderDescription, renderTypes, ROOT, STALE, TYPES_FILE } from '../../scripts/openapi-files.mjs';
import { CUSTOMER_EVENT_TYPES } from '../../src/modules/webhooks/event-types.js';
import type { OpenApiDocument } from '../support/described-api.js';
import { appRoutes } from '../support/routes.js';
import { withTestApp } from '../support/with-test-app.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

/** Redocly's lint with redocly.yaml (recommended rules), offline. */
function lint(file: string): LintReport {
  const run = spawnSync(process.execPath, [REDOCLY_CLI, 'lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format=json'], {
    cwd: ROOT,
    env: { ...process.env, ...REDOCLY_ENV },
    encoding: 'utf8',
  });
  const json = run.stdout.slice(run.stdout.indexOf('{'));
  if (!json) throw new Error(`redocly lint printed no report (exit ${run.status}): ${run.stderr}`);
  return JSON.parse(json) as LintReport;
}

const summarize = (report: LintReport) => report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);

/** The first line where two texts differ, to say where a committed file went stale. */
function firstDifference(expected: string, actual: string): string {
  const [a, b] = [expected.split('\n'), actual.split('\n')];
  const line = a.findIndex((l, i) => l !== b[i]);
  return line === -1 ? `(${b.length - a.length} extra lines)` : `line ${line + 1}: app says ${JSON.stringify(a[line])}, file has ${JSON.stringify(b[line])}`;
}

function operations(document: OpenApiDocument) {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, operation: item[method] as OpenApiDocument['paths'][string][string] & { summary?: string; security?: unknown[] } })),
  );
}

describe('the API description (OpenAPI 3.1) the app serves', () => {
  const t = withTestApp();
  let served: OpenApiDocument;

  beforeAll(async () => {
    served = (await (await fetch(`${t.app.url}/docs-json`)).json()) as OpenApiDocument;
  });

  it('is the committed docs/openapi.json, and docs/openapi.d.ts its generated types', async () => {
    const expected = renderDescription(served);
    const file = committed(DESCRIPTION_FILE);
    if (file !== expected) throw new Error(`${STALE}\ndocs/openapi.json differs from /docs-json at ${firstDifference(expected, file)}`);
    const types = await renderTypes(served);
    const typesFile = committed(TYPES_FILE);
    if (typesFile !== types) throw new Error(`${STALE}\ndocs/openapi.d.ts differs from the types of /docs-json at ${firstDifference(types, typesFile)}`);
  });

  it('describes the API key as an opaque bearer token, not a JWT', () => {
    const schemes = (served as unknown as { components: { securitySchemes: Record<string, Record<string, unknown>> } }).components.securitySchemes;
    expect(schemes.bearer).toEqual({ type: 'http', scheme: 'bearer', description: expect.stringContaining('olk_') });
  });

  it("passes Redocly's recommended rules with no error and no warning", () => {
    const report = lint(DESCRIPTION_FILE);
    expect(summarize(report)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('is linted for real: an operation without a summary is an error', () => {
    const broken = structuredClone(served) as OpenApiDocument & { paths: Record<string, Record<string, { summary?: string }>> };
    delete broken.paths['/v2/messages'].post.summary;
    const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    try {
      writeFileSync(join(dir, 'broken.json'), JSON.stringify(broken));
      const report = lint(join(dir, 'broken.json'));
      expect(report.problems.map((p) => `${p.severity} ${p.ruleId}`)).toContain('error operation-summary');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('documents every /v2 route the app serves, and only those (retired routes, which only answer 405, aside)', () => {
    // POST /v2/phone_numbers: the retired first-come registration; docs/contract.md names its 405.
    const retired = ['POST /v2/phone_numbers'];
    const served_ = appRoutes(t.app.app)
      .filter((r) => r.url.startsWith('/v2/') && r.method !== 'HEAD' && !retired.includes(`${r.method} ${r.url}`))
      .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`);
    const documented = operations(served).map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(documented.sort()).toEqual([...new Set(served_)].sort());
  });

  it('gives every operation a summary and every answer a schema; the shared error body and its statuses where the code answers them', () => {
    const problems: string[] = [];
    let responses = 0;
    for (const { path, method, operation } of operations(served)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (!operation.summary) problems.push(`${where}: no summary`);
      const statuses = Object.keys(operation.responses);
      const need = (status: string, why: string) => statuses.includes(status) || problems.push(`${where}: no ${status} (${why})`);
      if (operation.security?.length) for (const s of ['401', '429', '503']) need(s, 'API key guard');
      if (operation.requestBody) for (const s of ['400', '413', '415', '422']) need(s, 'request body');
      if (path.includes('{')) need('404', 'path id');
      if (!statuses.some((s) => s.startsWith('2'))) problems.push(`${where}: no success answer`);
      for (const [status, response] of Object.entries(operation.responses)) {
        responses++;
        const schema = response.content?.['application/json']?.schema;
        if (!schema) problems.push(`${where} ${status}: no JSON schema`);
        if (status >= '400' && schema?.$ref !== '#/components/schemas/ErrorBody') problems.push(`${where} ${status}: not the ErrorBody schema`);
        if (['429', '503'].includes(status) && !response.headers?.['Retry-After']?.required) problems.push(`${where} ${status}: no Retry-After`);
      }
      for (const parameter of operation.parameters ?? []) if (!parameter.schema) problems.push(`${where}: parameter ${parameter.name} without a schema`);
    }
    expect(problems).toEqual([]);
    expect(served.openapi).toBe('3.1.0');
    // The counts the issue asked for (16 paths, 43 responses of which 12 had a schema, before).
    process.stderr.write(`openapi: ${Object.keys(served.paths).length} paths, ${operations(served).length} operations, ${responses} responses, all with a schema; ${Object.keys(served.webhooks).length} webhooks\n`);
    expect(responses).toBeGreaterThan(100);
  });

  it('describes what a customer endpoint receives for every customer event type: payload schema and the Standard Webhooks headers', () => {
    expect(Object.keys(served.webhooks).sort()).toEqual([...CUSTOMER_EVENT_TYPES].sort());
    for (const type of CUSTOMER_EVENT_TYPES) {
      const webhook = served.webhooks[type].post as OpenApiDocument['webhooks'][string]['post'] & { summary?: string };
      expect(webhook.summary).toMatch(/^Sent when ./);
      expect(webhook.parameters?.filter((p) => p.in === 'header' && p.required).map((p) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
      const body = served.components.schemas[webhook.requestBody!.content['application/json'].schema.$ref!.toString().split('/').pop()!] as {
        properties: { type: { const: string }; data: { $ref: string } };
      };
      expect(body.properties.type.const).toBe(type);
      expect(served.components.schemas[body.properties.data.$ref.split('/').pop()!]).toHaveProperty('properties.id');
    }
  });

  it('keeps Swagger UI working offline at /docs: every asset it loads is served by the app itself', async () => {
    const page = await fetch(`${t.app.url}/docs`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.filter((a) => /^(https?:)?\/\//.test(a))).toEqual([]);
    expect(assets).toEqual(expect.arrayContaining([expect.stringContaining('swagger-ui-bundle.js'), expect.stringContaining('swagger-ui-init.js')]));
    for (const asset of assets) {
      const url = new URL(asset, page.url);
      const res = await fetch(url);
      await res.arrayBuffer(); // read to the end: an unread body keeps the connection busy and the app from closing
      expect([url.pathname, res.status]).toEqual([url.pathname, 200]);
    }
    const init = await (await fetch(`${t.app.url}/docs/swagger-ui-init.js`)).text();
    expect(init).toContain('"openapi": "3.1.0"');
  });
});
