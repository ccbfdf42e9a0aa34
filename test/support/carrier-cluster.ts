import { startCluster, type Cluster, type ClusterOptions } from './cluster.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { TEST_REDIS_URL } from './env.js';
import { FakeCarrier } from './fake-carrier.js';

/** A cluster of real role processes (startCluster) on a database of its own, sending to a fake carrier. */
export interface CarrierCluster {
  db: TestDatabase;
  carrier: FakeCarrier;
  cluster: Cluster;
  /** Teardown: the processes first (nothing sends or writes after), then the carrier, then the database. */
  stop(): Promise<void>;
}

/**
 * What a file's beforeAll starts: a fresh database, a FakeCarrier, and a cluster on the shared
 * test Redis whose carrier URLs point at it (`extraEnv` on top); `options` as startCluster's.
 * A start that fails part way stops what it had started.
 */
export async function startCarrierCluster(extraEnv: Record<string, string> = {}, options: ClusterOptions = {}): Promise<CarrierCluster> {
  const db = await createTestDatabase();
  let carrier: FakeCarrier | undefined;
  try {
    carrier = await new FakeCarrier().start();
    const cluster = await startCluster(db.url, TEST_REDIS_URL, { ...carrier.env(), ...extraEnv }, options);
    const started = carrier;
    return {
      db,
      carrier: started,
      cluster,
      async stop() {
        try {
          await cluster.stopAll();
          await started.stop();
        } finally {
          await db.drop();
        }
      },
    };
  } catch (err) {
    await carrier?.stop().catch(() => undefined);
    await db.drop();
    throw err;
  }
}
