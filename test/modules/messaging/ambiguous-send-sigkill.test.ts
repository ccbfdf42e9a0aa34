import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startCarrierCluster, type CarrierCluster } from '../../support/carrier-cluster.js';
import { clusterReport, type Cluster } from '../../support/cluster.js';
import type { TestDatabase } from '../../support/database.js';
import type { FakeCarrier } from '../../support/fake-carrier.js';
import { assignNumbersIn } from '../../support/numbers.js';
import { waitFor } from '../../support/wait.js';

const NUMBERS = { telnyx: '+17735550401', twilio: '+14155550401', vonage: '+447700900401' } as const;
type Carrier = keyof typeof NUMBERS;

/**
 * The worker SIGKILLed between the carrier's accept and its answer, on each carrier, with real
 * role processes (an api, a relay, one worker): the carrier took the send (its SMS is on the
 * handset) and holds its answer; the worker dies; the one started after it takes the message over
 * when the dead run's lease ends, which counts its outcome unknown (the lease was never given
 * back), and resolves it from the carrier's lookup instead of sending it again.
 */
describe('a worker SIGKILLed between the carrier\'s accept and its answer', () => {
  let started: CarrierCluster;
  let db: TestDatabase;
  let carrier: FakeCarrier;
  let cluster: Cluster;

  beforeAll(async () => {
    started = await startCarrierCluster({ CARRIER_SEND_TIMEOUT_MS: '5000', DISPATCH_LEASE_SECONDS: '6', SEND_OUTCOME_WINDOW_SECONDS: '30' }, { workers: 1 });
    ({ db, carrier, cluster } = started);
    for (const [on, number] of Object.entries(NUMBERS)) await assignNumbersIn(db.url, cluster.customer.accountId, [number], on as Carrier);
  }, 120_000);
  afterAll(() => started?.stop());

  it.each(Object.keys(NUMBERS) as Carrier[])('%s: the SMS reaches the handset once; sent, billed and announced once; found_by_lookup', async (on) => {
    const held = carrier.holdNext();
    const { status, body } = await cluster.customer.post('/v2/messages', { from: NUMBERS[on], to: '+13125550401', text: `killed mid-send on ${on}` });
    expect(status).toBe(202);
    const id: string = body.data.id;
    await held.arrived;
    expect(carrier.handsetFor(id)).toHaveLength(1);

    const worker = cluster.workers[0];
    await worker.kill('SIGKILL');
    held.release();
    worker.start();
    await worker.waitStarted();

    const sent = await waitFor(
      () => db.pool.query(`SELECT status, carrier_message_id FROM messages WHERE id = $1`, [id]).then((r) => r.rows[0]),
      (m) => m?.status === 'sent',
      { what: `${id} resolved by the worker started after the kill`, timeoutMs: 60_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${clusterReport(cluster)}`);
    });
    expect(carrier.sendsFor(id)).toHaveLength(1);
    expect(carrier.handsetFor(id)).toHaveLength(1);
    expect(sent.carrier_message_id).toBe(carrier.handsetFor(id)[0].carrierId);
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    expect(await db.count(`SELECT count(*) FROM outbound_events WHERE type = 'message.sent' AND payload->>'id' = $1`, [id])).toBe(1);
    const history = (await db.pool.query(`SELECT status, detail FROM message_status_history WHERE message_id = $1 ORDER BY id`, [id])).rows;
    expect(history).toEqual([
      { status: 'queued', detail: null },
      { status: 'sending', detail: null },
      { status: 'sending', detail: expect.stringMatching(/^outcome_unknown: /) },
      { status: 'sent', detail: 'found_by_lookup' },
    ]);
  }, 120_000);
});
