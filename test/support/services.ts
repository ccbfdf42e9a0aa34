import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
// @ts-expect-error plain ESM script shared with npm start and .ci/run
import { givePostgres, initPostgresCluster, startPostgresCluster, startRedisServer, stopPostgresCluster } from '../../scripts/services.mjs';
import { TEMPLATE_DB } from './env.js';
import { freePort } from './ports.js';

export interface PrivateRedis {
  url: string;
  port: number;
  stop(): void;
  start(): Promise<void>;
  dispose(): void;
}

/** A redis-server of this test's own, on a free port: free to stop, restart and flush. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'onceline-redis-'));
  await startRedisServer(port, dir);
  const stop = () => {
    try {
      execFileSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave'], { stdio: 'ignore' });
    } catch {
      // already down
    }
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    start: () => startRedisServer(port, dir),
    dispose() {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivatePostgres {
  port: number;
  baseUrl: string;
  stop(): void;
  start(): Promise<void>;
  dispose(): void;
}

/**
 * One initdb per jest run (1.2 s of CPU), copied for each private cluster (`cp -a`: 0.1 s). Made
 * aside and renamed into place, so a worker never copies a half-made one; a worker that loses the
 * race drops its own. Global set-up names it (ONCELINE_TEST_PG_SEED), global teardown removes it.
 */
function initialisedDataDir(): string {
  const seed = process.env.ONCELINE_TEST_PG_SEED ?? join(tmpdir(), `onceline-pgseed-${TEMPLATE_DB}`);
  if (existsSync(join(seed, 'PG_VERSION'))) return seed;
  const building = mkdtempSync(`${seed}-`);
  try {
    initPostgresCluster(join(building, 'data'), building);
    try {
      renameSync(join(building, 'data'), seed);
    } catch (err) {
      if (!existsSync(join(seed, 'PG_VERSION'))) throw err;
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return seed;
}

/** A PostgreSQL cluster of this test's own (a copy of this run's initialised data directory), free to stop and restart. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const port = await freePort();
  const parent = mkdtempSync(join(tmpdir(), 'onceline-pg-'));
  const dataDir = join(parent, 'data');
  givePostgres(parent);
  execFileSync('cp', ['-a', initialisedDataDir(), dataDir]);
  await startPostgresCluster(dataDir, port, join(parent, 'pg.log'));
  return {
    port,
    baseUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => stopPostgresCluster(dataDir, 'immediate'),
    start: () => startPostgresCluster(dataDir, port, join(parent, 'pg.log')),
    dispose() {
      stopPostgresCluster(dataDir, 'immediate');
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
