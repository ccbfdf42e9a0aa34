import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from '../../docs/openapi.js';

// ajv-formats is CommonJS: imported from ESM, its plugin is module.exports.default.
const addFormats = addFormatsModule.default;

type Schema = Record<string, unknown>;
interface Described {
  description?: string;
  headers?: Record<string, { required?: boolean; schema?: Schema }>;
  content?: Record<string, { schema?: Schema }>;
}
interface Operation {
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, Described>;
}
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: Operation }>;
  components: { schemas: Record<string, Schema> };
}

/**
 * The schemas with every object closed: the description lets customers tolerate fields added
 * later, but the app must not send a field the description leaves out.
 */
function closed<T>(node: T): T {
  if (Array.isArray(node)) return node.map(closed) as T;
  if (node === null || typeof node !== 'object') return node;
  const copy = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === 'example' ? v : closed(v)]));
  if (copy.properties && copy.additionalProperties === undefined) copy.additionalProperties = false;
  return copy as T;
}

/**
 * Holds the app's answers to its own OpenAPI description: every answer must have a documented
 * status, carry the headers documented as required, and have a body its schema accepts (JSON
 * Schema 2020-12, as OpenAPI 3.1 says) with no field it leaves out. What it checked is kept, so
 * a test can say it covered a case.
 */
export class DescribedApi {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<Schema, ValidateFunction>();
  /** `GET /v2/messages/{id} 404`, one per distinct answer checked. */
  readonly checked = new Set<string>();

  constructor(readonly document: OpenApiDocument) {
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'onceline:openapi', components: closed(document.components) });
  }

  /** Problems of one body against a schema of the description (a `$ref` or inline), empty when it conforms. */
  problems(schema: Schema, value: unknown): string[] {
    let validate = this.validators.get(schema);
    if (!validate) {
      const rebased = closed(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"onceline:openapi#/components/')));
      validate = this.ajv.compile(rebased);
      this.validators.set(schema, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
  }

  /** Throws, naming what differs, unless this answer is one the description promises for the operation. */
  async checkResponse(method: string, schemaPath: string, response: Response): Promise<void> {
    const where = `${method.toUpperCase()} ${schemaPath} → ${response.status}`;
    const operation = this.document.paths[schemaPath]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${where}: the description has no such operation`);
    await this.check(where, operation.responses, response);
  }

  /** The same for what a customer endpoint receives: the webhook of its type, headers and body. */
  checkWebhook(headers: Record<string, string>, body: string): string[] {
    const parsed = JSON.parse(body) as { type?: string };
    const webhook = parsed.type ? this.document.webhooks[parsed.type]?.post : undefined;
    if (!webhook) return [`webhook of type ${parsed.type}: the description has no such webhook`];
    const problems: string[] = [];
    for (const header of webhook.parameters ?? []) {
      const value = headers[header.name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`header ${header.name} missing`);
      } else if (header.schema) {
        problems.push(...this.problems(header.schema, value).map((p) => `header ${header.name}: ${p}`));
      }
    }
    problems.push(...this.problems(webhook.requestBody!.content['application/json'].schema, parsed));
    this.checked.add(`webhook ${parsed.type}`);
    return problems;
  }

  private async check(where: string, responses: Record<string, Described>, response: Response): Promise<void> {
    const described = responses[String(response.status)];
    if (!described) throw new Error(`${where}: status not documented (documented: ${Object.keys(responses).join(', ')})`);
    const problems: string[] = [];
    for (const [name, header] of Object.entries(described.headers ?? {})) {
      const value = response.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`header ${name} missing`);
        continue;
      }
      const typed = header.schema?.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value;
      if (header.schema) problems.push(...this.problems(header.schema, typed).map((p) => `header ${name}: ${p}`));
    }
    const schema = described.content?.['application/json']?.schema;
    if (!schema) {
      problems.push('the description gives this answer no JSON schema');
    } else {
      const text = await response.clone().text();
      if (!(response.headers.get('content-type') ?? '').startsWith('application/json')) problems.push(`content-type ${response.headers.get('content-type')}`);
      else problems.push(...this.problems(schema, JSON.parse(text)));
    }
    if (problems.length > 0) throw new Error(`${where} does not match the description:\n  ${problems.join('\n  ')}`);
    this.checked.add(where);
  }

  /** openapi-fetch middleware: every answer is checked before the test sees it. */
  middleware(): Middleware {
    return {
      onResponse: async ({ request, response, schemaPath }) => {
        await this.checkResponse(request.method, schemaPath, response);
        return undefined;
      },
    };
  }
}

/** The generated typed client (docs/openapi.d.ts + openapi-fetch) for one API key, every answer checked. */
export function typedClient(baseUrl: string, apiKey: string | undefined, described: DescribedApi) {
  const client = createClient<paths>({ baseUrl, headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  client.use(described.middleware());
  return client;
}

export type TypedClient = ReturnType<typeof typedClient>;
