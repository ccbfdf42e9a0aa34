// Makes sure PostgreSQL and Redis answer at DATABASE_URL / REDIS_URL. When one does not and its
// URL points at this machine, a project-local instance is started under .data/ from the
// machine's binaries; when the binaries are missing, the message says exactly what to install.
// Used by `npm start`, `npm test` and .ci/run.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, chownSync } from 'node:fs';
import net from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/onceline';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

const say = (line) => process.stderr.write(`${line}\n`);

function canConnect(host, port, timeoutMs = 1000) {
  return new Promise((done) => {
    const socket = net.connect({ host, port });
    const finish = (ok) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('connect', () => finish(true));
    socket.once('error', () => finish(false));
  });
}

async function waitForPort(host, port, deadlineMs) {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (await canConnect(host, port, 500)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** Debian keeps initdb and pg_ctl in /usr/lib/postgresql/<version>/bin, not on PATH. */
export function findPostgresBin() {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'pg_ctl'))).sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(base, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v pg_ctl'], { encoding: 'utf8' });
  return which.status === 0 ? dirname(which.stdout.trim()) : undefined;
}

/** PostgreSQL refuses to run as root: run its binaries as the postgres user when we are root. */
export function asPostgresUser(bin, args) {
  if (process.getuid?.() === 0) return ['runuser', ['-u', 'postgres', '--', bin, ...args]];
  return [bin, args];
}

/** Runs initdb in dataDir (created, and with logDir given to the postgres user when we are root). */
export function initPostgresCluster(dataDir, logDir = dirname(dataDir)) {
  const bin = findPostgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed. Install it (Debian: apt-get install postgresql) or run `docker compose up -d postgres redis`.');
  mkdirSync(dataDir, { recursive: true });
  givePostgres(dataDir, logDir);
  const [cmd, args] = asPostgresUser(join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Running as root, the postgres user must own what PostgreSQL writes to. */
export function givePostgres(...dirs) {
  if (process.getuid?.() !== 0) return;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  for (const dir of dirs) chownSync(dir, uid, gid);
}

/** Initialises (once) and starts a PostgreSQL cluster in dataDir on port; returns when it answers. */
export async function startPostgresCluster(dataDir, port, logFile = `${dataDir}.log`) {
  const bin = findPostgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed. Install it (Debian: apt-get install postgresql) or run `docker compose up -d postgres redis`.');
  mkdirSync(dirname(dataDir), { recursive: true });
  if (!existsSync(join(dataDir, 'PG_VERSION'))) initPostgresCluster(dataDir, dirname(logFile));
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dataDir} -c fsync=on`;
  const [cmd, args] = asPostgresUser(join(bin, 'pg_ctl'), ['-D', dataDir, '-o', options, '-l', logFile, '-w', '-t', '60', 'start']);
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (!(await waitForPort('127.0.0.1', port, 30000))) throw new Error(`PostgreSQL in ${dataDir} did not start; see ${logFile}`);
}

export function stopPostgresCluster(dataDir, mode = 'fast') {
  const bin = findPostgresBin();
  const [cmd, args] = asPostgresUser(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', mode, '-w', 'stop']);
  spawnSync(cmd, args, { stdio: 'ignore' });
}

/** Starts a redis-server on port that keeps nothing on disk. */
export async function startRedisServer(port, dir) {
  const which = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  if (which.status !== 0) throw new Error('Redis is not installed. Install it (Debian: apt-get install redis-server) or run `docker compose up -d postgres redis`.');
  mkdirSync(dir, { recursive: true });
  execFileSync('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'yes', '--save', '', '--appendonly', 'no',
    '--dir', dir, '--logfile', join(dir, 'redis.log'), '--pidfile', join(dir, 'redis.pid'),
  ]);
  if (!(await waitForPort('127.0.0.1', port, 10000))) throw new Error(`redis-server on port ${port} did not start; see ${dir}/redis.log`);
}

export async function ensurePostgres(databaseUrl = DEFAULT_DATABASE_URL) {
  const url = new URL(databaseUrl);
  const host = url.hostname;
  const port = Number(url.port || 5432);
  if (await canConnect(host, port)) return 'running';
  if (!LOCAL_HOSTS.has(host)) throw new Error(`PostgreSQL does not answer at ${host}:${port} (DATABASE_URL) and it is not local, so it is not started here.`);
  say(`PostgreSQL does not answer at ${host}:${port}; starting a project-local instance in .data/postgres`);
  await startPostgresCluster(join(ROOT, '.data', 'postgres'), port, join(ROOT, '.data', 'postgres.log'));
  return 'started';
}

export async function ensureRedis(redisUrl = DEFAULT_REDIS_URL) {
  const url = new URL(redisUrl);
  const host = url.hostname;
  const port = Number(url.port || 6379);
  if (await canConnect(host, port)) return 'running';
  if (!LOCAL_HOSTS.has(host)) throw new Error(`Redis does not answer at ${host}:${port} (REDIS_URL) and it is not local, so it is not started here.`);
  say(`Redis does not answer at ${host}:${port}; starting a project-local instance in .data/redis`);
  await startRedisServer(port, join(ROOT, '.data', 'redis'));
  return 'started';
}

export async function ensureServices(env = process.env) {
  const [pg, redis] = await Promise.all([
    ensurePostgres(env.DATABASE_URL || DEFAULT_DATABASE_URL),
    ensureRedis(env.REDIS_URL || DEFAULT_REDIS_URL),
  ]);
  return { postgres: pg, redis };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  ensureServices()
    .then((r) => say(`services: postgres ${r.postgres}, redis ${r.redis}`))
    .catch((err) => {
      say(err.message);
      process.exit(1);
    });
}
