import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
// @ts-expect-error plain ESM script shared with npm start and .ci/run
import { startPostgresCluster, startRedisServer, stopPostgresCluster } from '../../scripts/services.mjs';
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

/** A PostgreSQL cluster of this test's own (initdb in a temp dir), free to stop and restart. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const port = await freePort();
  const parent = mkdtempSync(join(tmpdir(), 'onceline-pg-'));
  const dataDir = join(parent, 'data');
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
