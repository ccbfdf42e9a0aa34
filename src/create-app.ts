import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController } from 'fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { describeApi } from './api-description.js';
import { AppModule } from './app.module.js';
import type { AppConfig } from './platform/config/app-config.js';
import { randomBytesPooled } from './platform/ids.js';
import { MetricsRegistry } from './platform/metrics/metrics-registry.js';
import { answerClientError, answerFrameworkError } from './platform/http/client-errors.js';
import { ErrorsFilter } from './platform/http/errors.filter.js';
import { refuseNonJsonBodies } from './platform/http/json-bodies.js';
import { createPino, PinoNestLogger } from './platform/logging/logger.js';
import { PrintablePathParams } from './platform/http/path-params.js';
import { MAX_BODY_BYTES, validationPipe } from './platform/http/validation.js';

/** Builds the Nest application (all modules, Fastify HTTP stack) without listening. */
export async function createApp(config: AppConfig): Promise<NestFastifyApplication> {
  const log = createPino(config.LOG_LEVEL);
  const adapter = new FastifyAdapter({
    loggerInstance: log,
    // Per-request lines only at debug: at thousands of webhooks a second they cost more than the work.
    logController: new LogController({ disableRequestLogging: config.LOG_LEVEL !== 'debug' && config.LOG_LEVEL !== 'trace' }),
    bodyLimit: MAX_BODY_BYTES,
    genReqId: () => `req_${randomBytesPooled(8).toString('hex')}`,
    trustProxy: false,
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    rawBody: true,
    logger: new PinoNestLogger(log),
    abortOnError: false,
  });
  app.useGlobalFilters(new ErrorsFilter());
  // Pipes run before the handler: a path id no id can equal is 404 before any query sees it.
  app.useGlobalPipes(new PrintablePathParams(), validationPipe());

  const metrics = app.get(MetricsRegistry);
  const fastify = app.getHttpAdapter().getInstance();
  refuseNonJsonBodies(fastify);
  fastify.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  fastify.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions?.url ?? 'unmatched';
    metrics.httpDuration.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });

  SwaggerModule.setup('docs', app, () => describeApi(app), { jsonDocumentUrl: 'docs-json' });
  return app;
}
