import { applyDecorators, HttpCode, type Type } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiProperty, ApiPropertyOptional, ApiQuery, ApiResponse, ApiSchema, DECORATORS, type HeaderObject } from '@nestjs/swagger';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './pagination.js';
import { MAX_BODY_BYTES } from './validation.js';

/**
 * How a route is documented (docs/api-description.md, "How to document a route"): the OpenAPI description is
 * generated from these decorators and the schema classes beside the DTOs, never kept by hand.
 *
 *   @ApiOperationDoc({ summary: 'Send a message', status: 202, body: SendMessageDto, ok: DataOf(MessageView), errors: [409] })
 *
 * The status given is also the route's HttpCode, so the description and the answer cannot differ.
 */

@ApiSchema({ name: 'ErrorSource', description: 'What in the request the error is about' })
export class ErrorSource {
  @ApiPropertyOptional({ example: '/to', description: 'JSON Pointer to the body field' }) pointer?: string;
  @ApiPropertyOptional({ example: 'Idempotency-Key', description: 'Request header' }) header?: string;
  @ApiPropertyOptional({ example: 'page[size]', description: 'Query parameter' }) parameter?: string;
}

@ApiSchema({ name: 'Error', description: 'One entry of errors[]' })
export class ErrorObject {
  @ApiProperty({ example: 'validation_failed', description: 'Stable, machine-readable' }) code!: string;
  @ApiProperty({ example: 'Validation failed' }) title!: string;
  @ApiPropertyOptional({ example: 'to must be an E.164 number such as +15550001111' }) detail?: string;
  @ApiPropertyOptional({ type: ErrorSource }) source?: ErrorSource;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, example: { request_id: 'req_5f0c2a9d1e7b4c36' } }) meta?: Record<string, unknown>;
}

@ApiSchema({ name: 'ErrorBody', description: 'The body of every 4xx and 5xx answer' })
export class ErrorBody {
  @ApiProperty({ type: [ErrorObject], minItems: 1 }) errors!: ErrorObject[];
}

@ApiSchema({ name: 'ListMeta' })
export class ListMeta {
  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as page[after] for the next page; null on the last page' })
  next_cursor!: string | null;
}

/** The name a class has under components.schemas: its @ApiSchema name, else the class name. */
export function schemaName(type: Type): string {
  const named = Reflect.getOwnMetadata(DECORATORS.API_SCHEMA, type) as { name?: string }[] | undefined;
  return named?.at(-1)?.name ?? type.name;
}

const wrappers = new Map<string, { item: Type; wrapper: Type }>();

function wrapper<T>(name: string, item: Type, build: () => Type<T>): Type<T> {
  const known = wrappers.get(name);
  if (known && known.item !== item) throw new Error(`two schemas would be named ${name}: give one an @ApiSchema({ name })`);
  if (known) return known.wrapper as Type<T>;
  const made = build();
  ApiSchema({ name })(made);
  wrappers.set(name, { item, wrapper: made });
  return made;
}

/** `{"data": <item>}`, the body of every single-resource answer; named `<Item>Response`. */
export function DataOf<T>(item: Type<T>): Type<{ data: T }> {
  return wrapper(`${schemaName(item)}Response`, item, () => {
    class Data {
      data!: T;
    }
    ApiProperty({ type: () => item })(Data.prototype, 'data');
    return Data;
  });
}

/** `{"data": [<item>...], "meta": {"next_cursor"}}`, the body of every list; named `<Item>List`. */
export function ListOf<T>(item: Type<T>): Type<{ data: T[]; meta: ListMeta }> {
  return wrapper(`${schemaName(item)}List`, item, () => {
    class List {
      data!: T[];
      meta!: ListMeta;
    }
    ApiProperty({ type: () => [item], description: 'Newest first' })(List.prototype, 'data');
    ApiProperty({ type: () => ListMeta })(List.prototype, 'meta');
    return List;
  });
}

export type ErrorStatus = 400 | 401 | 404 | 409 | 413 | 415 | 422 | 429 | 503;

const RETRY_AFTER: Record<string, HeaderObject> = {
  'Retry-After': { description: 'Seconds to wait before retrying', required: true, schema: { type: 'integer', minimum: 1 } },
};

/** What each error status means on this API; an operation may say more for its own case. */
const ERROR_MEANING: Record<ErrorStatus, string> = {
  400: 'Malformed request: the body is not JSON, nests too deeply, or a header is malformed',
  401: 'Missing, unknown or revoked API key',
  404: 'No such resource in your account',
  409: 'Conflict with the current state',
  413: `Request body over ${MAX_BODY_BYTES / 1024} KiB`,
  415: 'The body is not application/json',
  422: 'Validation failed: each errors[] entry names the body field (source.pointer) or query parameter (source.parameter)',
  429: "Over the API key's requests per minute; retry after Retry-After",
  503: 'Temporarily unavailable (database); retry after Retry-After',
};

/** Statuses an operation with a JSON request body can answer before the handler runs. */
export const BODY_ERRORS: ErrorStatus[] = [400, 413, 415, 422];

export type ErrorDoc = ErrorStatus | [status: ErrorStatus, meaning: string];

/** The shared error body for each status (429 and 503 with Retry-After); on a controller, for all its routes. */
export function ApiErrorResponses(...errors: ErrorDoc[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...errors.map((error) => {
      const [status, meaning] = Array.isArray(error) ? error : [error, ERROR_MEANING[error]];
      return ApiResponse({ status, description: meaning, type: ErrorBody, ...(status === 429 || status === 503 ? { headers: RETRY_AFTER } : {}) });
    }),
  );
}

export interface OperationDoc {
  summary: string;
  description?: string;
  /** The success status; also applied as the route's HttpCode. Default 200. */
  status?: 200 | 201 | 202;
  /** The JSON request body (a DTO class); adds the statuses a body can cause (400, 413, 415, 422). */
  body?: Type;
  /** The success body: DataOf(View) or ListOf(View). */
  ok: Type;
  /** Headers of the success answer. */
  headers?: Record<string, HeaderObject>;
  /** Error statuses of this route beyond the controller's (CustomerApi: 401, 429, 503) and the body's. */
  errors?: ErrorDoc[];
  /** The route honours Idempotency-Key (parseIdempotencyKey + IdempotencyKeys): the header, the replay header, its 400, 409 and 422. */
  idempotent?: boolean;
}

const IDEMPOTENCY_KEY_HEADER = {
  name: 'Idempotency-Key',
  required: false,
  schema: { type: 'string' as const, pattern: '^"?[A-Za-z0-9_:-]{1,255}"?$' },
  description: 'Same key + same body replays the first answer (24 h); a concurrent twin waits for the first',
};
const IDEMPOTENT_REPLAYED: Record<string, HeaderObject> = {
  'Idempotent-Replayed': { description: '"true" when this is the stored answer to an earlier request with the same Idempotency-Key', schema: { type: 'string', enum: ['true'] } },
};
const IDEMPOTENCY_ERRORS: Record<400 | 409 | 422, (meaning: string) => string> = {
  400: (meaning) => `${meaning}; or an Idempotency-Key that is not 1 to 255 of A-Z a-z 0-9 _ : -`,
  409: () => 'A request with this Idempotency-Key is still in progress (code idempotency_key_in_use); retry shortly',
  422: (meaning) => `${meaning}; or the Idempotency-Key was used with another body (code idempotency_key_reused)`,
};

/** Every error status of an operation with its meaning: the body's, the operation's own, the Idempotency-Key's. */
function operationErrors(doc: OperationDoc): [ErrorStatus, string][] {
  const meanings = new Map<ErrorStatus, string>();
  for (const status of doc.body ? BODY_ERRORS : []) meanings.set(status, ERROR_MEANING[status]);
  for (const error of doc.errors ?? []) {
    const [status, meaning] = Array.isArray(error) ? error : [error, ERROR_MEANING[error]];
    meanings.set(status, meaning);
  }
  if (doc.idempotent) {
    for (const status of [400, 409, 422] as const) meanings.set(status, IDEMPOTENCY_ERRORS[status](meanings.get(status) ?? ERROR_MEANING[status]));
  }
  return [...meanings].sort(([a], [b]) => a - b);
}

const SUCCESS_MEANING = { 200: 'OK', 201: 'Created', 202: 'Accepted' } as const;

/** One operation's whole description: summary, request body, success body and every error status. */
export function ApiOperationDoc(doc: OperationDoc): MethodDecorator {
  const status = doc.status ?? 200;
  const headers = { ...doc.headers, ...(doc.idempotent ? IDEMPOTENT_REPLAYED : {}) };
  return applyDecorators(
    HttpCode(status),
    ApiOperation({ summary: doc.summary, description: doc.description }),
    ...(doc.body ? [ApiBody({ type: doc.body })] : []),
    ...(doc.idempotent ? [ApiHeader(IDEMPOTENCY_KEY_HEADER)] : []),
    ApiResponse({ status, description: SUCCESS_MEANING[status], type: doc.ok, ...(Object.keys(headers).length > 0 ? { headers } : {}) }),
    ApiErrorResponses(...operationErrors(doc)),
  );
}

/** `page[size]` and `page[after]` of a list (see parsePage). */
export function ApiPageQuery(): MethodDecorator {
  return applyDecorators(
    ApiQuery({ name: 'page[size]', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE } }),
    ApiQuery({ name: 'page[after]', required: false, schema: { type: 'string' }, description: 'meta.next_cursor of the previous page' }),
  );
}
