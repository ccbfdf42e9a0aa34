import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { LOOKUP_MAX_PAGES, referencedUrl } from '../../../src/carriers/message-sender.js';
import { MessageSenders } from '../../../src/carriers/message-senders.js';
import type { TestDatabase } from '../../support/database.js';
import { newCarrierMessageId, type FakeCarrier } from '../../support/fake-carrier.js';
import { MessagingPipeline } from '../../support/messaging-pipeline.js';
import { waitFor } from '../../support/wait.js';

const NUMBERS = { telnyx: '+17735550301', twilio: '+14155550301', vonage: '+447700900301' } as const;
type Carrier = keyof typeof NUMBERS;
const CARRIERS = Object.keys(NUMBERS) as Carrier[];
/** Short, so an answer slower than it costs a second, not ten. */
const SEND_TIMEOUT_MS = 1000;
const WINDOW_SECONDS = 3;

/**
 * A send whose answer is lost after the carrier took it, on each carrier, against a fake that
 * behaves as the carriers document (no idempotency header honoured: a second send is a second SMS
 * on the handset). Each case: the handset gets the SMS once; the message is recorded sent (and
 * delivered by the receipt where one comes), billed once, announced once, and its history says how
 * the unknown outcome was resolved. The worker SIGKILLed between accept and answer is
 * test/system/ambiguous-send-sigkill.test.ts.
 */
describe('an ambiguous send is resolved, never blindly resent', () => {
  let pipeline: MessagingPipeline;
  let db: TestDatabase;
  let carrier: FakeCarrier;
  let n = 0;

  beforeAll(async () => {
    pipeline = await MessagingPipeline.start(
      { [NUMBERS.telnyx]: 'telnyx', [NUMBERS.twilio]: 'twilio', [NUMBERS.vonage]: 'vonage' },
      { CARRIER_SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS), DISPATCH_LEASE_SECONDS: '2', SEND_OUTCOME_WINDOW_SECONDS: String(WINDOW_SECONDS) },
    );
    ({ db, carrier } = pipeline);
  });
  afterAll(() => pipeline.stop());

  async function send(on: Carrier, text: string): Promise<string> {
    const { status, body } = await pipeline.customer.post('/v2/messages', { from: NUMBERS[on], to: `+1312555${String(1000 + n++).padStart(4, '0')}`, text });
    expect(status).toBe(202);
    return body.data.id;
  }
  const row = (id: string) => db.pool.query(`SELECT status, carrier_message_id, outcome_unknown_since FROM messages WHERE id = $1`, [id]).then((r) => r.rows[0]);
  const details = (id: string) => db.pool.query(`SELECT status, detail FROM message_status_history WHERE message_id = $1 ORDER BY id`, [id]).then((r) => r.rows);
  const waitStatus = (id: string, status: string, timeoutMs = 20_000) => waitFor(() => row(id), (r) => r?.status === status, { what: `${id} to be ${status}`, timeoutMs });
  const waitUnknown = (id: string) => waitFor(() => row(id), (r) => r?.outcome_unknown_since != null, { what: `${id}'s outcome to be unknown` });

  /** Once on the handset, billed once, `message.sent` once, the carrier's id recorded, and the history's resolution. */
  async function expectOnce(id: string, resolution: string): Promise<void> {
    expect(carrier.handsetFor(id)).toHaveLength(1);
    const message = await row(id);
    expect(message.carrier_message_id).toBe(carrier.handsetFor(id)[0].carrierId);
    expect(message.outcome_unknown_since).toBeNull();
    expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
    expect(await pipeline.events('message.sent', id)).toBe(1);
    const history = await details(id);
    expect(history.slice(0, 3)).toEqual([
      { status: 'queued', detail: null },
      { status: 'sending', detail: null },
      { status: 'sending', detail: expect.stringMatching(/^outcome_unknown: /) },
    ]);
    expect(history[3]).toEqual({ status: 'sent', detail: resolution });
  }

  describe.each(CARRIERS)('%s: the lookup follows the carrier\'s paging', (on) => {
    /** Our message on the handset behind `ahead` other SMS between the same numbers (after them in the carrier's order: Twilio lists newest first), listed one a page. */
    function listedBehind(ahead: number) {
      const message = { id: `msg_${randomUUID().replace(/-/g, '').slice(0, 26)}`, from: NUMBERS[on], to: `+1312555${String(1000 + n++).padStart(4, '0')}`, text: `paged ${on}` };
      const sms = (ourMessageId: string, at: Date) => ({
        carrier: on, carrierId: newCarrierMessageId(on), ourMessageId, from: message.from, to: message.to, text: ourMessageId === message.id ? message.text : 'another',
        callbackUrl: referencedUrl('https://onceline.invalid/webhooks/x', ourMessageId), at,
      });
      for (let i = 0; i < ahead; i++) carrier.handset.push(sms(`msg_${randomUUID().replace(/-/g, '').slice(0, 26)}`, new Date()));
      const ours = sms(message.id, new Date(Date.now() - 10_000));
      carrier.handset.push(ours);
      carrier.lookupPageSize = 1;
      return { message, carrierId: ours.carrierId };
    }
    const findSent = async (message: { id: string; from: string; to: string; text: string }) => {
      const before = carrier.lookups.length;
      try {
        const found = await pipeline.app.app.get(MessageSenders).for(on).findSent(message, new Date(Date.now() - 60_000));
        return { found, pages: carrier.lookups.slice(before) };
      } finally {
        carrier.lookupPageSize = undefined;
      }
    };
    const NEXT_PAGE = { telnyx: /page%5Bnumber%5D=\d/, twilio: /PageToken=/, vonage: /cursor=.*iv=/ }[on];

    it('finds a send that is not on the first page', async () => {
      const { message, carrierId } = listedBehind(2);
      const { found, pages } = await findSent(message);
      expect(found).toEqual({ carrierMessageIds: [carrierId] });
      expect(pages.length).toBeGreaterThanOrEqual(3);
      expect(pages.length).toBeLessThanOrEqual(LOOKUP_MAX_PAGES);
      expect(pages.slice(1).every((p) => NEXT_PAGE.test(p.path))).toBe(true);
    });

    it(`reads at most LOOKUP_MAX_PAGES (${LOOKUP_MAX_PAGES}) pages: a send further back is not seen`, async () => {
      const { message } = listedBehind(LOOKUP_MAX_PAGES);
      const { found, pages } = await findSent(message);
      expect(found).toBeUndefined();
      expect(pages).toHaveLength(LOOKUP_MAX_PAGES);
    });
  });

  describe.each(CARRIERS)('%s', (on) => {
    it('the connection reset after the carrier took it: resolved by the status webhook naming our message (found_by_receipt), then delivered', async () => {
      carrier.lookupsShow = false;
      carrier.loseAnswers('reset');
      const id = await send(on, `reset ${on}`);
      try {
        await waitUnknown(id);
        expect(await carrier.sendReceipt(id)).toEqual([200]);
        await waitStatus(id, 'delivered');
      } finally {
        carrier.lookupsShow = true;
      }
      await expectOnce(id, 'found_by_receipt');
      expect((await details(id))[4]).toEqual({ status: 'delivered', detail: null });
      expect(await pipeline.events('message.delivered', id)).toBe(1);
    });

    it('a 504 after the carrier took it: resolved by the carrier\'s lookup (found_by_lookup)', async () => {
      carrier.loseAnswers('504');
      const id = await send(on, `504 ${on}`);
      await waitStatus(id, 'sent');
      await expectOnce(id, 'found_by_lookup');
      expect(carrier.sendsFor(id)).toHaveLength(1);
    });

    it('an answer slower than our timeout: resolved by the lookup, the late answer changes nothing', async () => {
      carrier.loseAnswers('slow', 1, SEND_TIMEOUT_MS * 2);
      const id = await send(on, `slow ${on}`);
      await waitStatus(id, 'sent');
      await expectOnce(id, 'found_by_lookup');
    });

    it('a carrier that takes every send and answers 504 each time: taken once, resolved (receipt or lookup), never sent again', async () => {
      carrier.loseAnswers('504', Infinity);
      try {
        carrier.receiptsTo({ appUrl: pipeline.app.url, telnyx: pipeline.telnyx }, 600);
        const id = await send(on, `504 always ${on}`);
        await waitStatus(id, 'delivered');
        expect(carrier.sendsFor(id)).toHaveLength(1);
        await expectOnce(id, (await details(id))[3].detail);
        expect(['found_by_receipt', 'found_by_lookup']).toContain((await details(id))[3].detail);
      } finally {
        carrier.loseAnswers('504', 0);
        carrier.receiptsTo({ appUrl: pipeline.app.url, telnyx: pipeline.telnyx });
      }
    });

    it('a 504 the carrier gave without taking the send, and nothing shown within the window: sent exactly once more, and recorded as such', async () => {
      carrier.answerNext({ status: 504 });
      const id = await send(on, `never taken ${on}`);
      await waitUnknown(id);
      await waitStatus(id, 'sent', 30_000);
      expect(carrier.sendsFor(id)).toHaveLength(2);
      expect(carrier.handsetFor(id)).toHaveLength(1);
      expect(carrier.lookups.length).toBeGreaterThan(0);
      expect((await details(id)).map((h: { detail: string | null }) => h.detail)).toEqual([null, null, expect.stringMatching(/^outcome_unknown: /), 'resent_after_nothing_found', null]);
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [id])).toBe(1);
      expect(await pipeline.events('message.sent', id)).toBe(1);
    });

    it('a documented refusal (4xx) fails it at once, and a documented "not taken" (503) is retried at once, neither ever counted unknown', async () => {
      carrier.answerNext({ status: 422, body: refusal(on) });
      const refused = await send(on, `refused ${on}`);
      await waitStatus(refused, 'failed');
      expect(carrier.sendsFor(refused)).toHaveLength(1);
      expect(await db.count(`SELECT count(*) FROM usage_records WHERE resource_id = $1`, [refused])).toBe(0);
      expect(await pipeline.events('message.failed', refused)).toBe(1);

      carrier.answerNext({ status: 503 });
      const retried = await send(on, `retried ${on}`);
      await waitStatus(retried, 'sent');
      expect(carrier.sendsFor(retried)).toHaveLength(2);
      expect(carrier.handsetFor(retried)).toHaveLength(1);
      for (const id of [refused, retried]) expect((await details(id)).every((h: { detail: string | null }) => h.detail === null)).toBe(true);
    });
  });
});

/** Each carrier's documented refusal body. */
function refusal(on: Carrier): unknown {
  if (on === 'twilio') return { code: 21211, message: "The 'To' number is not a valid phone number.", status: 400 };
  if (on === 'vonage') return { type: 'https://developer.vonage.com/api-errors/messages#1150', title: 'Invalid params', detail: 'The value of one or more parameters is invalid.', instance: 'bf0ca0bf927b3b52e3cb03217e1a1ddf' };
  return { errors: [{ code: '40310', title: 'Invalid destination', detail: 'to is not a mobile number' }] };
}
