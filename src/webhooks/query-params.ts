import { UnprocessableEntityException } from '@nestjs/common';

/** A query parameter that must be one of a list, or absent. */
export function optionalOneOf<T extends string>(query: Record<string, unknown>, name: string, allowed: readonly T[]): T | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new UnprocessableEntityException({
    errors: [{ code: 'validation_failed', title: 'Validation failed', detail: `${name} must be one of: ${allowed.join(', ')}`, source: { parameter: name } }],
  });
}
