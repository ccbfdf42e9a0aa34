import { NotFoundException, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';

/** Control, format, surrogate, private-use and unassigned characters: none is in any id of ours. */
const NOT_PRINTABLE = /\p{C}/u;

/**
 * Every path parameter of the API is an id, and no id holds a character that cannot be printed.
 * Such a parameter (a NUL, which Postgres refuses in text) names nothing, so it is answered 404
 * here, after authentication and before any query.
 */
export class PrintablePathParams implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'param') return value;
    const values = typeof value === 'string' ? [value] : Object.values(value ?? {});
    if (values.some((v) => typeof v === 'string' && NOT_PRINTABLE.test(v))) {
      throw new NotFoundException({ code: 'not_found', title: 'Resource not found', detail: `no resource has this ${metadata.data ?? 'id'}` });
    }
    return value;
  }
}
