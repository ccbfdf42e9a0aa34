import { UnprocessableEntityException, ValidationPipe, type ValidationError } from '@nestjs/common';
import type { ApiError } from './problem.js';

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

/** DTO validation: unknown fields rejected; each problem becomes one errors[] entry with its pointer. */
export function validationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    exceptionFactory: (errors) => new UnprocessableEntityException({ errors: flatten(errors) }),
  });
}
