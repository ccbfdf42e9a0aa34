import { BadRequestException, UnprocessableEntityException, ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import type { ApiError } from './problem.js';

/** Request bodies above this size are refused with 413 before anything is parsed. */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * No request body of the API nests deeper than this (ours nest two levels). class-transformer
 * and class-validator recurse once per level, so a few KB of `[[[[…` would exhaust the stack.
 */
export const MAX_BODY_NESTING = 32;

/**
 * No array of a request body holds more than this (ours hold at most 10 ring targets): a longer
 * one is refused before class-transformer and class-validator walk each element (issue 25: 10,000
 * targets cost 470 ms and a 1.9 MB answer).
 */
export const MAX_BODY_ARRAY_ITEMS = 100;

/** Most errors[] entries one 422 lists: the answer stays small whatever the body. */
export const MAX_VALIDATION_ERRORS = 20;

/** NUL, which Postgres text cannot hold, and a lone UTF-16 surrogate, which no UTF-8 text can. */
const UNSTORABLE = /\u0000|\p{Cs}/u;

function flatten(errors: ValidationError[], path = ''): ApiError[] {
  return errors.flatMap((error) => {
    const pointer = `${path}/${error.property}`;
    const own = Object.values(error.constraints ?? {}).map((detail) => ({
      code: 'validation_failed',
      title: 'Validation failed',
      detail,
      source: { pointer },
    }));
    return [...own, ...flatten(error.children ?? [], pointer)];
  });
}

export type BodyProblem = { kind: 'deep' } | { kind: 'text' | 'items'; pointer: string };

/**
 * What no DTO should ever see in a parsed JSON body: nesting deeper than `maxNesting`, an array
 * longer than `maxItems`, or a string that cannot be stored. One loop, not recursion (it must not
 * itself run out of stack), stopping at the first problem.
 */
export function bodyProblem(body: unknown, maxNesting = MAX_BODY_NESTING, maxItems = Infinity): BodyProblem | undefined {
  const pending: [value: unknown, depth: number, pointer: string][] = [[body, 0, '']];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, depth, pointer] = next;
    if (typeof value === 'string' && UNSTORABLE.test(value)) return { kind: 'text', pointer: pointer || '/' };
    if (value === null || typeof value !== 'object') continue;
    if (depth >= maxNesting) return { kind: 'deep' };
    if (Array.isArray(value) && value.length > maxItems) return { kind: 'items', pointer: pointer || '/' };
    for (const [key, child] of Object.entries(value)) pending.push([child, depth + 1, `${pointer}/${key}`]);
  }
  return undefined;
}

/** The DTO pipe, refusing what class-transformer must not walk, or Postgres could not store, first. */
class ApiValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const problem = metadata.type === 'body' ? bodyProblem(value, MAX_BODY_NESTING, MAX_BODY_ARRAY_ITEMS) : undefined;
    if (problem?.kind === 'deep') {
      throw new BadRequestException({ code: 'bad_request', title: 'Request body nested too deeply', detail: `JSON objects and arrays may nest at most ${MAX_BODY_NESTING} levels` });
    }
    if (problem) {
      const detail = problem.kind === 'items' ? `arrays may hold at most ${MAX_BODY_ARRAY_ITEMS} items (see the field's own limit)` : 'text must not contain NUL or unpaired surrogate characters';
      throw invalidField(problem.pointer, detail);
    }
    return super.transform(value, metadata);
  }
}

/** 422 for one field of the request body that the DTO's own checks could not judge (e.g. "not one of your numbers"). */
export function invalidField(pointer: string, detail: string): UnprocessableEntityException {
  return new UnprocessableEntityException({ errors: [{ code: 'validation_failed', title: 'Validation failed', detail, source: { pointer } }] });
}

/** DTO validation: unknown fields rejected; each problem becomes one errors[] entry with its pointer. */
export function validationPipe(): ValidationPipe {
  return new ApiValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    // Bounded: a body of many wrong elements is answered with the first few problems, not all.
    exceptionFactory: (errors) => new UnprocessableEntityException({ errors: flatten(errors).slice(0, MAX_VALIDATION_ERRORS) }),
  });
}
