import { expect } from '@jest/globals';
import { DataSource } from 'typeorm';
import { AccountsService } from '../../src/modules/accounts/accounts.service.js';
import { migrate } from '../../src/platform/database/migrator.js';
import { UnitOfWork } from '../../src/platform/database/unit-of-work.js';
import { ApiClient } from './api-client.js';
import { TEST_POOL_ENV } from './env.js';
import { assignNumbersIn } from './numbers.js';
import { telnyxSigner, type TelnyxSigner } from './carrier-signing.js';
import { freePort } from './ports.js';
import { RoleProcess, waitHttpOk } from './processes.js';
import { runCliHere, warmCliHost } from './run-cli.js';

/**
 * The built program as real processes on one database and one Redis: apis, relays and
 * workers, each of which a test may SIGKILL and restart; a customer owning `numbers`.
 */
export interface ClusterOptions {
  numbers?: string[];
  workers?: number;
  /** How many api processes (1 by default), each on its own port; the first on `port`. */
  apis?: number;
  /** How many relay processes (1 by default). */
  relays?: number;
  /** The port the first api will listen on, when something must know it first (a sandbox calling back). */
  port?: number;
  /** The test runs CLI commands on the cluster (expectVerified): the file's CLI host boots with its processes, not at the first command. */
  cli?: boolean;
}

export interface Cluster {
  /** The first of `apis` (the one `url` and `customer` talk to). */
  api: RoleProcess;
  apis: RoleProcess[];
  /** The first of `relays`. */
  relay: RoleProcess;
  relays: RoleProcess[];
  workers: RoleProcess[];
  url: string;
  /** One base URL per api process, in the order of `apis`. */
  urls: string[];
  customer: ApiClient;
  telnyx: TelnyxSigner;
  /** What every process of the cluster (and its CLI) runs with. */
  env: Record<string, string>;
  /** Teardown: every process SIGKILLed at once; resolves when all have exited. */
  stopAll(): Promise<void>;
}

export async function startCluster(databaseUrl: string, redisUrl: string, extraEnv: Record<string, string> = {}, options: ClusterOptions = {}): Promise<Cluster> {
  const port = options.port ?? (await freePort());
  const telnyx = telnyxSigner();
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `chaos${port}`,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    TELNYX_PUBLIC_KEY: telnyx.publicKey,
    OUTBOX_POLL_MS: '50',
    OUTBOX_REDRIVE_AFTER_SECONDS: '2',
    WORKER_LOCK_DURATION_MS: '3000',
    // The lease on a job run after commit: a killed worker's are relayed this soon. Renewed every
    // third of it, so generous enough that a loaded CI machine never misses a renewal.
    WORKER_AFTER_COMMIT_GRACE_SECONDS: '6',
    // Bounds what a killed worker can leave half-done (the multi-process test counts on it).
    WORKER_AFTER_COMMIT_JOBS: '32',
    CARRIER_EVENT_RETRY_BASE_MS: '200',
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    // Bursts from one number go out at once unless a test paces its number (PATCH messaging).
    MESSAGE_SEND_RATE_DEFAULT: '1000',
    ...TEST_POOL_ENV,
    ...extraEnv,
  };
  // What `onceline migrate` runs (the CLI's own tests cover the command), in this process: the
  // file's CLI host would cost 1.6-2 s of boot here, before any process of the cluster starts.
  await migrate(env.DATABASE_URL);
  const ports = [port];
  while (ports.length < (options.apis ?? 1)) ports.push(await freePort());
  const apis = ports.map((p) => new RoleProcess('api', { ...env, PORT: String(p) }).start());
  const relays = Array.from({ length: options.relays ?? 1 }, () => new RoleProcess('relay', env).start());
  const workers = Array.from({ length: options.workers ?? 2 }, () => new RoleProcess('worker', env).start());
  if (options.cli) warmCliHost();
  // Teardown kills every process at once (SIGKILL): no test asserts on a cluster's graceful
  // stop, which held each afterAll 0.3-0.8 s while the relay and workers finished what they held.
  const stopAll = async () => {
    await Promise.all([...apis, ...relays, ...workers].map((p) => p.kill()));
  };
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const url = urls[0];
  let customer: ApiClient;
  try {
    // The customer and its numbers are made while the processes boot: they need the database, not them.
    const [{ account, api_key }] = await Promise.all([
      (async () => {
        const created = await createAccountIn(env.DATABASE_URL, 'chaos');
        await assignNumbersIn(env.DATABASE_URL, created.account.id, options.numbers ?? [], 'telnyx');
        return created;
      })(),
      (async () => {
        for (const u of urls) await waitHttpOk(`${u}/health/live`);
        // Every role up, not only the apis: a relay or worker still booting when a test stops
        // PostgreSQL fails its start and exits (seen: chaos "Postgres stopped" stalled, 150 stored, 0 processed).
        await Promise.all([...apis, ...relays, ...workers].map((p) => p.waitStarted()));
      })(),
    ]);
    customer = new ApiClient(url, account.id, api_key);
  } catch (err) {
    // A cluster that never came up stops its own processes: nobody else holds them yet.
    await stopAll();
    throw err;
  }
  return {
    api: apis[0],
    apis,
    relay: relays[0],
    relays,
    workers,
    url,
    urls,
    customer,
    telnyx,
    env,
    stopAll,
  };
}

/**
 * An account and its first API key as `onceline accounts:create` makes them (the same service
 * method, on a connection of the test's own): no CLI command on the path of every cluster start.
 */
async function createAccountIn(databaseUrl: string, name: string): Promise<{ account: { id: string }; api_key: string }> {
  const dataSource = await new DataSource({ type: 'postgres', url: databaseUrl, entities: [] }).initialize();
  try {
    return await new AccountsService(new UnitOfWork(dataSource), dataSource).createAccount(name);
  } finally {
    await dataSource.destroy();
  }
}

/** Each process of the cluster: running or how it ended, its starts, and the end of its stderr; for a failure's message. */
export function clusterReport(cluster: Cluster): string {
  const roles = [...cluster.apis, ...cluster.relays, ...cluster.workers];
  return roles
    .map((p) => `--- ${p.role} (pid ${p.pid}, ${p.running ? 'running' : `exited: ${p.exit}`}, started ${p.starts}×):\n${p.output.slice(-3000)}`)
    .join('\n');
}

/** The promise as an auditor checks it where it runs: `onceline verify` finds every invariant holding. */
export async function expectVerified(cluster: Cluster): Promise<void> {
  const run = await runCliHere(['verify', '--json'], cluster.env);
  let report: { ok: boolean; invariants: { name: string; ok: boolean }[] };
  try {
    report = JSON.parse(run.stdout);
  } catch {
    throw new Error(`verify printed no JSON document (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
  expect(report.invariants.filter((i) => !i.ok)).toEqual([]);
  expect(report.invariants.length).toBeGreaterThan(0);
  expect(run.code).toBe(0);
}
