// A migrated scratch database for the benchmarks that measure PostgreSQL itself
// (partition-drop.mjs, partition-period.mjs), and their time bound.
import pg from 'pg';
import { freshDatabase } from './lib.mjs';
import { startPrivatePostgres } from './private-pg.mjs';

/** Ends the process with a message when the benchmark `name` runs past `seconds`. */
export function giveUpAfter(name, seconds) {
  const deadline = setTimeout(() => {
    process.stderr.write(`${name}: over ${seconds} s, giving up\n`);
    process.exit(1);
  }, seconds * 1000);
  deadline.unref();
}

/**
 * `<prefix>_<8 hex>`, migrated (lib.mjs freshDatabase), with a connected client. By default on a private PostgreSQL cluster
 * (bench/private-pg.mjs: initdb in a temp dir, a free port on 127.0.0.1, the shared server's speed
 * settings), so WAL figures are the benchmark's alone; BENCH_PRIVATE_PG=0 uses a scratch database
 * of BENCH_PG_BASE (127.0.0.1:5432) instead. `where` says which, for the report; close() drops it
 * and stops the private cluster.
 */
export async function scratchDatabase(prefix) {
  const onShared = process.env.BENCH_PRIVATE_PG === '0';
  const sharedBase = process.env.BENCH_PG_BASE ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(new URL(sharedBase).hostname)) throw new Error('BENCH_PG_BASE must point at this machine (loopback only)');
  const privatePg = onShared ? undefined : await startPrivatePostgres();
  const base = privatePg?.baseUrl ?? sharedBase;
  let db;
  let client;
  try {
    db = await freshDatabase(prefix, base);
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  } catch (err) {
    await db?.drop().catch(() => undefined);
    privatePg?.stop();
    throw err;
  }
  const where = privatePg ? 'private PostgreSQL cluster (settings of the shared one)' : base.replace(/\/\/[^@]*@/, '//');
  return {
    client,
    where,
    async close() {
      await client.end().catch(() => undefined);
      await db.drop().catch(() => undefined);
      privatePg?.stop();
    },
  };
}
