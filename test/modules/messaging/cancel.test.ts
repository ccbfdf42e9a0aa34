import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DispatchMessageHandler } from '../../../src/modules/messaging/dispatch-message.handler.js';
import type { TestDatabase } from '../../support/database.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { pausePoint } from '../../support/pause.js';
import { waitFor } from '../../support/wait.js';

const OUR_NUMBER = '+17735550002';

/** Cancelling a scheduled send, raced against the message's own dispatch: exactly one of cancelled or sent. */
describe('cancelling a message', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;

  const dispatch = (messageId: string) => pipeline.app.app.get(DispatchMessageHandler).handle({ messageId }, { jobId: 'manual', attempt: 1 });
  const statusOf = (id: string) => db.pool.query(`SELECT status FROM messages WHERE id = $1`, [id]).then((r) => r.rows[0]?.status);
  const usageRows = (id: string) => db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id]);
  const blockedOnRows = () =>
    db.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`);

  /** A message whose own job waits a day, so only the test's runs dispatch it. */
  async function scheduled(text: string): Promise<string> {
    const { status, body } = await pipeline.customer.post('/v2/messages', { from: OUR_NUMBER, to: '+13125550077', text, send_at: new Date(Date.now() + 86400_000).toISOString() });
    expect(status).toBe(202);
    return body.data.id;
  }

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start({ [OUR_NUMBER]: 'telnyx' });
    db = pipeline.db;
  });
  afterAll(() => pipeline.stop());

  it('POST /v2/messages/:id/cancel and DELETE /v2/messages/:id cancel a scheduled message once; then dispatch sends nothing', async () => {
    const id = await scheduled('cancel me');
    const cancelled = await pipeline.customer.post(`/v2/messages/${id}/cancel`, {});
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ id, status: 'cancelled' });
    const again = await pipeline.customer.request('DELETE', `/v2/messages/${id}`);
    expect(again.status).toBe(409);
    expect(again.body.errors[0].code).toBe('message_not_cancellable');
    await dispatch(id);
    expect(await statusOf(id)).toBe('cancelled');
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(0);
    expect(await pipeline.events('message.cancelled', id)).toBe(1);
    expect(await usageRows(id)).toBe(0);

    const other = await scheduled('delete me');
    expect((await pipeline.customer.request('DELETE', `/v2/messages/${other}`)).body.data.status).toBe('cancelled');
    expect((await pipeline.customer.post('/v2/messages/msg_nosuchmessage/cancel', {})).status).toBe(404);
  });

  it('cancel holds before its commit while dispatch runs: cancelled, never sent, never billed, message.cancelled once', async () => {
    const id = await scheduled('cancel first');
    const pause = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', when: "NEW.status = 'cancelled'" });
    try {
      await pause.hold();
      const cancel = pipeline.customer.post(`/v2/messages/${id}/cancel`, {});
      await pause.waitUntilPaused();
      const run = dispatch(id);
      await waitFor(blockedOnRows, (n) => n >= 1, { what: 'dispatch to wait for the cancel' });
      await pause.release();
      expect((await cancel).status).toBe(200);
      await run;
    } finally {
      await pause.remove();
    }
    expect(await statusOf(id)).toBe('cancelled');
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(0);
    expect(await pipeline.events('message.cancelled', id)).toBe(1);
    expect(await pipeline.events('message.sent', id)).toBe(0);
    expect(await usageRows(id)).toBe(0);
  });

  it('dispatch claims before its commit while cancel runs: sent, the cancel answers 409, no message.cancelled', async () => {
    const id = await scheduled('dispatch first');
    const pause = await pausePoint(db.url, { table: 'messages', on: 'UPDATE', when: "NEW.status = 'sending'" });
    try {
      await pause.hold();
      const run = dispatch(id);
      await pause.waitUntilPaused();
      const cancel = pipeline.customer.post(`/v2/messages/${id}/cancel`, {});
      await waitFor(blockedOnRows, (n) => n >= 1, { what: 'cancel to wait for the claim' });
      await pause.release();
      const answer = await cancel;
      expect(answer.status).toBe(409);
      expect(answer.body.errors[0].detail).toContain('sending');
      await run;
    } finally {
      await pause.remove();
    }
    expect(await statusOf(id)).toBe('sent');
    expect(pipeline.carrier.sendsFor(id)).toHaveLength(1);
    expect(await pipeline.events('message.cancelled', id)).toBe(0);
    expect(await usageRows(id)).toBe(1);
  });
});
