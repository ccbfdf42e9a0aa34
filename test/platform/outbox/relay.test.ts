import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { UnitOfWork } from '../../../src/platform/database/unit-of-work.js';
import { ProbeJob } from '../../../src/platform/outbox/probe.handler.js';
import { OutboxRelay } from '../../../src/platform/outbox/outbox-relay.js';
import { OutboxService } from '../../../src/platform/outbox/outbox.service.js';
import { Queues } from '../../../src/platform/outbox/queues.js';
import { startTestApp, type TestApp } from '../../support/app.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/wait.js';

describe('relay wake-ups', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    // A poll so long that only NOTIFY can explain a prompt relay.
    app = await startTestApp({ databaseUrl: db.url, http: false, env: { OUTBOX_POLL_MS: '600000' } });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const enqueue = (jobId: string) =>
    app.app.get(UnitOfWork).run((tx) => app.app.get(OutboxService).enqueue(tx, { job: ProbeJob, data: { label: 'wake' }, jobId }));
  const relayed = (jobId: string) => db.count(`SELECT count(*) FROM outbox_jobs WHERE job_id = $1 AND relayed_at IS NOT NULL`, [jobId]);

  it('a commit whose NOTIFY arrives while a batch is being published is relayed without waiting for the poll', async () => {
    const relay = app.app.get(OutboxRelay);
    const queues = app.app.get(Queues);
    const publish = queues.publish.bind(queues);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const spy = jest.spyOn(queues, 'publish').mockImplementation(async (jobs) => {
      if (jobs.some((j) => j.jobId === 'wake-first')) await gate; // hold the first batch open
      return publish(jobs);
    });
    await relay.start();

    await enqueue('wake-first');
    await waitFor(() => spy.mock.calls.length, (n) => n >= 1, { what: 'the first batch to reach publish' });
    // Committed after the first batch's SELECT: only its NOTIFY, delivered mid-batch, can bring it.
    await enqueue('wake-second');
    await waitFor(() => (relay as unknown as { notified: boolean }).notified, Boolean, { what: 'the relay to receive the NOTIFY' });
    release();

    await waitFor(() => relayed('wake-first'), (n) => n === 1, { what: 'the first job relayed' });
    await waitFor(() => relayed('wake-second'), (n) => n === 1, { what: 'the second job relayed well before the 10-minute poll' });
    expect(spy.mock.calls.flatMap(([jobs]) => jobs.map((j) => j.jobId))).toEqual(['wake-first', 'wake-second']);
  });
});
