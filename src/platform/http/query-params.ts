import { UnprocessableEntityException } from '@nestjs/common';

export function invalidParameter(name: string, detail: string): UnprocessableEntityException {
  return new UnprocessableEntityException({ errors: [{ code: 'validation_failed', title: 'Validation failed', detail, source: { parameter: name } }] });
}

/** An optional query parameter that must be one of `allowed`. */
export function optionalEnum<T extends string>(query: Record<string, unknown>, name: string, allowed: readonly T[]): T | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidParameter(name, `${name} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/** An optional ISO 8601 date-time query parameter, in years 1 to 9999 (JavaScript reaches past what Postgres stores). */
export function optionalDate(query: Record<string, unknown>, name: string): Date | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  const date = new Date(String(value));
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 1 || year > 9999) throw invalidParameter(name, `${name} must be an ISO 8601 date-time`);
  return date;
}
