import { afterAll, beforeAll, describe, it, jest } from '@jest/globals';
import { OutboxRelay } from '../../../src/platform/outbox/outbox-relay.js';
import { PartitionMaintenance } from '../../../src/platform/retention/partition-maintenance.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';

describe('relay partition maintenance', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ databaseUrl: db.url, http: false });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('runs as the relay starts, not one maintenance interval (5 s) later: partitions due are made before traffic', async () => {
    const maintain = jest.spyOn(app.app.get(PartitionMaintenance), 'maintain');
    await app.app.get(OutboxRelay).start();
    // Well under the 5 s interval of recovery and housekeeping, which the first run used to wait for.
    await waitFor(() => maintain.mock.calls.length, (n) => n >= 1, { timeoutMs: 2000, what: 'the first partition maintenance' });
  });
});
