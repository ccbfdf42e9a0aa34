import { randomBytes } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadConfig, type AppConfig } from '../../src/platform/config/app-config.js';
import { createApp } from '../../src/create-app.js';
import { JobWorkers } from '../../src/platform/outbox/job-workers.js';
import { OutboxRelay } from '../../src/platform/outbox/outbox-relay.js';
import { TEST_POOL_ENV, TEST_REDIS_URL } from './env.js';

export interface TestApp {
  app: NestFastifyApplication;
  config: AppConfig;
  url: string;
  close(): Promise<void>;
}

export interface TestAppOptions {
  databaseUrl: string;
  env?: Record<string, string>;
  /** Which loops to run besides HTTP. */
  relay?: boolean;
  worker?: boolean;
  http?: boolean;
  /** Listen on this port instead of a random one (when PUBLIC_BASE_URL must be known before start). */
  port?: number;
}

/** The real application, in-process, on its own database and its own queue prefix. */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const config = loadConfig({
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `t${randomBytes(4).toString('hex')}`,
    PORT: '0',
    LOG_LEVEL: 'error',
    OUTBOX_POLL_MS: '50',
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    // Bursts from one number go out at once unless a test paces its number (PATCH messaging).
    MESSAGE_SEND_RATE_DEFAULT: '1000',
    ...TEST_POOL_ENV,
    ...options.env,
  });
  const app = await createApp(config);
  await app.init();
  if (options.relay) await app.get(OutboxRelay).start();
  if (options.worker) app.get(JobWorkers).start();
  let url = '';
  if (options.http !== false) {
    await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
    url = await app.getUrl();
    url = url.replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  }
  return { app, config, url, close: () => app.close() };
}
