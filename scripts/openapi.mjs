// `npm run openapi`: writes docs/openapi.json (the OpenAPI 3.1 description the built app
// serves at /docs-json) and docs/openapi.d.ts (its TypeScript types), then lints it with
// Redocly (redocly.yaml). Needs no database or Redis: Nest builds the app in preview mode,
// which reads the decorators without starting any provider.
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { DESCRIPTION_FILE, REDOCLY_CLI, REDOCLY_ENV, renderDescription, renderTypes, TYPES_FILE } from './openapi-files.mjs';
import { ROOT } from './services.mjs';

const { AppModule } = await import('../dist/lib/app.module.js');
const { describeApi } = await import('../dist/lib/api-description.js');
const { loadConfig } = await import('../dist/lib/platform/config/app-config.js');

const app = await NestFactory.create(AppModule.forRoot(loadConfig({ ...process.env, LOG_LEVEL: 'silent' })), new FastifyAdapter(), { preview: true, logger: false });
const document = describeApi(app);
await app.close();

writeFileSync(DESCRIPTION_FILE, renderDescription(document));
writeFileSync(TYPES_FILE, await renderTypes(document));
process.stderr.write(`wrote ${relative(ROOT, DESCRIPTION_FILE)} and ${relative(ROOT, TYPES_FILE)}\n`);

const lint = spawnSync(process.execPath, [REDOCLY_CLI, 'lint', DESCRIPTION_FILE], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...REDOCLY_ENV } });
process.exit(lint.status ?? 1);
