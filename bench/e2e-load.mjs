// The load of bench/e2e.mjs: signed Telnyx inbound SMS webhooks offered at a fixed rate, and the
// customer endpoint (127.0.0.1) that receives their `message.received` events. A run collects the
// carrier webhook → customer webhook latency of its own SMS and counts duplicates by webhook-id.
import { randomUUID } from 'node:crypto';
import { telnyxHeaders } from './lib.mjs';
import { encodePost, headerOf, rawReceiver, rawSender } from './raw-http-load.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const newRun = () => ({ latencies: [], sendOffsets: [], received: 0, deliveries: 0, duplicates: 0 });

function inbound(base, toNumber, carrierMessageId, i, occurredAt) {
  return JSON.stringify({
    data: { event_type: 'message.received', id: randomUUID(), occurred_at: occurredAt.toISOString(), record_type: 'event',
      payload: { id: carrierMessageId, record_type: 'message', direction: 'inbound', type: 'SMS', from: { phone_number: '+13125550001' },
        to: [{ phone_number: toNumber, status: 'webhook_delivered' }], text: `bench ${i}`, parts: 1, errors: [] } },
    meta: { attempt: 1, delivered_to: `${base}/webhooks/telnyx` },
  });
}

/**
 * Starts the customer endpoint; resolves { hookUrl, offer, drain, close } for SMS signed with
 * `privateKey` to `toNumber`. `answerAfterMs`: the endpoint answers each delivery that much later.
 */
export async function startInboundLoad(privateKey, toNumber, { answerAfterMs = 0 } = {}) {
  const sentAt = new Map(); // carrier message id → { t0, run }
  const seenIds = new Set();
  // The carrier and the customer are other machines in real life: both ends of the load speak
  // HTTP over raw sockets (bench/raw-http-load.mjs), so they take as little as they can of the
  // CPU the system under test shares with them (node:http cost about twice as much here).
  const receiver = rawReceiver((head, body) => {
    const sent = sentAt.get(JSON.parse(body).data.carrier_message_id);
    if (!sent) return;
    const webhookId = headerOf(head, 'webhook-id');
    sent.run.deliveries++;
    if (seenIds.has(webhookId)) sent.run.duplicates++;
    else {
      seenIds.add(webhookId);
      sent.run.received++;
      sent.run.latencies.push(performance.now() - sent.t0);
      sent.run.sendOffsets.push(sent.t0 - sent.run.start);
    }
  }, { answerAfterMs });
  const senders = new Map(); // app base URL → its keep-alive sockets
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));

  /** Offers `rate`/s signed inbound SMS webhooks to `base` for `seconds`; the run collects what arrives. */
  async function offer(base, run, rate, seconds) {
    run.offered = Math.round(rate * seconds);
    run.rejected = 0;
    const interval = 1000 / rate;
    const url = `${base}/webhooks/telnyx`;
    // Built and signed before the clock starts, stamped with their planned send time: the carrier
    // signs on its own machines, so its CPU is not taken from the system under test here.
    const lead = 2000 + run.offered * 0.1;
    const firstAt = Date.now() + lead;
    const webhooks = Array.from({ length: run.offered }, (_, i) => {
      const at = firstAt + i * interval;
      const carrierMessageId = randomUUID();
      const body = inbound(base, toNumber, carrierMessageId, i, new Date(at));
      return { carrierMessageId, bytes: encodePost(url, telnyxHeaders(privateKey, body, Math.floor(at / 1000)), body) };
    });
    if (!senders.has(base)) senders.set(base, rawSender(url));
    const sender = senders.get(base);
    await sleep(Math.max(0, firstAt - Date.now()));
    run.start = performance.now();
    const inflight = [];
    for (let i = 0; i < run.offered; i++) {
      const wait = run.start + i * interval - performance.now();
      if (wait > 1) await sleep(wait);
      const { carrierMessageId, bytes } = webhooks[i];
      webhooks[i] = undefined;
      sentAt.set(carrierMessageId, { t0: performance.now(), run });
      inflight.push(sender.send(bytes).then((status) => status !== 200 && run.rejected++));
    }
    run.sendSeconds = (performance.now() - run.start) / 1000;
    await Promise.all(inflight);
  }

  /** Waits until every accepted webhook's customer event arrived, at most `timeoutMs`; true if all did. */
  async function drain(run, timeoutMs) {
    const until = Date.now() + timeoutMs;
    while (run.received < run.offered - run.rejected && Date.now() < until) await sleep(100);
    run.drainSeconds = (performance.now() - run.start) / 1000;
    return run.received === run.offered - run.rejected;
  }

  return {
    hookUrl: `http://127.0.0.1:${receiver.address().port}/hook`,
    offer,
    drain,
    close: () => {
      for (const sender of senders.values()) sender.close();
      return new Promise((r) => receiver.close(r));
    },
  };
}
