import 'reflect-metadata';
import { ConfigError, loadConfig } from './platform/config/app-config.js';
import { withDotEnv } from './platform/config/dot-env.js';
import { cacheCompiledCode, saveCompiledCode } from './platform/lifecycle/compile-cache.js';
import { stopGracefullyOnSignal } from './platform/lifecycle/graceful-stop.js';
import { loadSandboxConfig, SandboxConfigError } from './sandbox/sandbox-config.js';
import { SandboxRefused, startSandbox } from './sandbox/sandbox-server.js';

export const ROLES = ['api', 'worker', 'relay', 'sandbox', 'all'] as const;
export type Role = (typeof ROLES)[number];

async function main(): Promise<void> {
  const role = (process.argv[2] ?? 'all') as Role;
  if (!ROLES.includes(role)) {
    process.stderr.write(`Unknown role "${role}". Use one of: ${ROLES.join(', ')}\n`);
    process.exit(2);
  }
  // The sandbox is a stand-in carrier: it reads its own settings, never the product's.
  if (role === 'sandbox') return runSandbox();
  let config;
  try {
    config = loadConfig(withDotEnv().env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  cacheCompiledCode();
  // Loaded here, not at the top: the sandbox role starts in a fraction of the time without Nest.
  const [{ createApp }, { JobWorkers }, { OutboxRelay }] = await Promise.all([
    import('./create-app.js'),
    import('./platform/outbox/job-workers.js'),
    import('./platform/outbox/outbox-relay.js'),
  ]);
  const app = await createApp(config);
  // Nest's hooks close the relay, then the workers (jobs in hand finish), then HTTP and the pools.
  stopGracefullyOnSignal(role, () => app.close());
  await app.init();
  if (role === 'relay' || role === 'all') await app.get(OutboxRelay).start();
  if (role === 'worker' || role === 'all') app.get(JobWorkers).start();
  const serves = role === 'api' || role === 'all';
  // This machine only unless HOST says otherwise (the Docker image sets 0.0.0.0).
  if (serves) await app.listen({ port: config.PORT, host: config.HOST });
  const urls = serves ? ` on http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${config.PORT} (docs /docs)` : '';
  process.stderr.write(`onceline ${role} started${urls}\n`);
  saveCompiledCode();
  const development = config.developmentWebhookCredentials;
  if (serves && development.length > 0) {
    process.stderr.write(`development credentials in use (webhooks they sign are taken from loopback peers only): ${development.join(', ')}\n`);
  }
}

/** The carrier sandbox alone: no database, no Redis, no Nest; stops on SIGINT/SIGTERM. */
async function runSandbox(): Promise<void> {
  let config;
  try {
    config = loadSandboxConfig(withDotEnv().env);
  } catch (err) {
    if (err instanceof SandboxConfigError) {
      process.stderr.write(`Invalid configuration: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const quiet = ['fatal', 'error', 'silent'].includes(config.LOG_LEVEL);
  let sandbox;
  try {
    sandbox = await startSandbox(config, (line) => quiet || process.stderr.write(`${line}\n`));
  } catch (err) {
    if (err instanceof SandboxRefused) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  stopGracefullyOnSignal('sandbox', () => sandbox.close());
  process.stderr.write(`onceline sandbox started on ${sandbox.url} (webhooks to ${config.publicBaseUrl}, chaos ${config.SANDBOX_CHAOS || 'off'})\n`);
}

main().catch((err) => {
  process.stderr.write(`onceline failed to start: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
