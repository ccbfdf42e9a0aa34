import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, unstorableReason } from '../database/pg-errors.js';
import { defaultError, type ApiError } from './problem.js';

/**
 * Every error leaves as `{"errors":[...]}`. A 500 says nothing internal, only its request id;
 * the cause goes to the log under the same id.
 */
@Catch()
export class ErrorsFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const { status, errors } = this.describe(exception, request.id);
    if (status === 503) reply.header('retry-after', reply.getHeader('retry-after') ?? '5');
    reply.status(status).header('content-type', 'application/json').send({ errors });
  }

  private describe(exception: unknown, requestId: string): { status: number; errors: ApiError[] } {
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const [code, title] = defaultError(status);
      const body = exception.getResponse();
      if (typeof body === 'object' && body !== null) {
        const b = body as { errors?: ApiError[]; code?: string; title?: string; detail?: string; message?: string | string[] };
        if (Array.isArray(b.errors)) return { status, errors: b.errors };
        const message = Array.isArray(b.message) ? b.message.join('; ') : b.message;
        return { status, errors: [{ code: b.code ?? code, title: b.title ?? title, detail: b.detail ?? message }] };
      }
      return { status, errors: [{ code, title, detail: String(body) }] };
    }
    const fastifyStatus = (exception as { statusCode?: number })?.statusCode;
    if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
      const [code, title] = defaultError(fastifyStatus);
      return { status: fastifyStatus, errors: [{ code, title, detail: (exception as Error).message }] };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(`database unavailable (request ${requestId}): ${(exception as Error).message}`);
      const [code, title] = defaultError(503);
      return { status: 503, errors: [{ code, title, meta: { request_id: requestId } }] };
    }
    const unstorable = unstorableReason(exception);
    if (unstorable !== undefined) {
      // A backstop: a value from the request that Postgres refused (SQLSTATE 22xxx: a NUL in
      // text, a date out of its range; 54xxx: a key too long for its index, JSON nested too
      // deep) is the caller's mistake. Its text names our schema: logged only.
      this.logger.warn(`value refused by the database (request ${requestId}): ${(exception as Error).message}`);
      return { status: 400, errors: [{ code: 'bad_request', title: 'Bad request', detail: `the request holds ${unstorable}` }] };
    }
    this.logger.error(`unhandled error (request ${requestId}): ${(exception as Error)?.stack ?? String(exception)}`);
    return { status: 500, errors: [{ code: 'internal_error', title: 'Internal error', meta: { request_id: requestId } }] };
  }
}
