import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../src/platform/config/app-config.js';
import { newId } from '../../src/platform/ids.js';
import { TelnyxCallControl } from '../../src/carriers/telnyx/telnyx-call-control.js';
import { TelnyxMessageSender } from '../../src/carriers/telnyx/telnyx-message-sender.js';
import { TelnyxNumbers } from '../../src/carriers/telnyx/telnyx-numbers.js';
import { TwilioMessageSender } from '../../src/carriers/twilio/twilio-message-sender.js';
import { TwilioNumbers } from '../../src/carriers/twilio/twilio-numbers.js';
import { VonageMessageSender } from '../../src/carriers/vonage/vonage-message-sender.js';
import { VonageNumbers } from '../../src/carriers/vonage/vonage-numbers.js';
import type { NumberProvider } from '../../src/carriers/number-provider.js';
import { expectConformant } from '../support/carrier-contract/index.js';
import { FakeCallControl } from '../support/fake-call-control.js';
import { FakeCarrier } from '../support/fake-carrier.js';
import { FakeNumberCarrier } from '../support/fake-number-carrier.js';
import { BASE_LITERALS, CALLED_OPERATIONS } from './called-operations.js';

const CARRIERS = new URL('../../src/carriers/', import.meta.url);

/**
 * The request paths a carrier client file builds: its string and template literals that start
 * with `/` (or follow a `${…ApiUrl}`), `${…}` written `{}`, the query left off; comments and our
 * own webhook paths (which we serve, not call) are not requests.
 */
function builtPaths(file: string): string[] {
  const found = new Set<string>();
  for (const line of readFileSync(new URL(file, CARRIERS), 'utf8').split('\n')) {
    if (/^\s*(\*|\/\/|\/\*)/.test(line)) continue;
    for (const [, literal] of line.matchAll(/[`'](\/[^`'\s]*|\$\{this\.config\.\w+ApiUrl\}[^`'\s]*)[`']/g)) {
      const path = literal.replace(/^\$\{this\.config\.\w+ApiUrl\}/, '').replace(/\$\{[^}]*\}\}?\)?/g, '{}').replace(/\?.*$/, '');
      if (path.startsWith('/') && !path.startsWith('/webhooks') && path !== '/') found.add(path);
    }
  }
  return [...found];
}

const SEND = { from: '+13125550100', to: '+13125550111', text: 'contract' };
const leg = { callId: 'call_01hzzzzzzzzzzzzzzzzzzzzzzz', target: 0, attempt: 1 };

describe('contract tier: every carrier operation src/carriers calls, through the real clients, against validating fakes', () => {
  let carrier: FakeCarrier;
  let numbers: FakeNumberCarrier;
  let calls: FakeCallControl;
  beforeAll(async () => {
    carrier = await new FakeCarrier().start();
    numbers = await new FakeNumberCarrier().start();
    calls = await new FakeCallControl().start();
  });
  afterAll(async () => {
    // stop() rejects on a divergence left unchecked: every test below checks (and clears) its own.
    await Promise.all([carrier?.stop(), numbers?.stop(), calls?.stop()]);
  });

  /**
   * The send, then the lookup a sender makes when a send's answer was lost (findSent: Telnyx
   * SearchDetailRecords, Twilio ListMessage, Vonage Reports get-records), answered by the fake in
   * the documented shape, and finding the message the send put on the handset.
   */
  it.each(['telnyx', 'twilio', 'vonage'] as const)('the %s send, and the lookup that finds it', async (name) => {
    const config = loadConfig(carrier.env());
    const sender = { telnyx: new TelnyxMessageSender(config), twilio: new TwilioMessageSender(config), vonage: new VonageMessageSender(config) }[name];
    // Twilio's date_created has whole seconds: the lookup asks from a little before the send.
    const since = new Date(Date.now() - 5_000);
    const message = { id: newId('msg'), ...SEND, text: `contract ${name}` };
    const lookupsBefore = carrier.lookups.length;
    const sent = await sender.send(message);
    expect(sent).toMatchObject({ outcome: 'accepted' });
    await expect(sender.findSent(message, since)).resolves.toEqual({ carrierMessageIds: [(sent as { carrierMessageId: string }).carrierMessageId] });
    expect(carrier.lookups).toHaveLength(lookupsBefore + 1);
    expectConformant(carrier.contract, `${name} send and lookup`);
  });

  it('Telnyx Call Control: dial, answer, bridge, hangup, record_start, transcription_start', async () => {
    const control = new TelnyxCallControl(loadConfig(calls.env()));
    const dialed = await control.send({ action: 'dial', commandId: randomUUID(), from: SEND.from, to: SEND.to, timeoutSecs: 30, leg });
    expect(dialed).toMatchObject({ outcome: 'done', controlId: expect.any(String) });
    const controlId = (dialed as { controlId: string }).controlId;
    for (const command of [
      { action: 'answer', controlId: 'v3:caller' },
      { action: 'bridge', controlId: 'v3:caller', otherControlId: controlId },
      { action: 'record_start', controlId },
      { action: 'transcription_start', controlId },
      { action: 'hangup', controlId },
    ] as const) {
      await expect(control.send({ ...command, commandId: randomUUID() })).resolves.toEqual({ outcome: 'done' });
    }
    expectConformant(calls.contract, 'Telnyx Call Control');
  });

  const providers: [string, (config: ReturnType<typeof loadConfig>) => NumberProvider][] = [
    ['telnyx', (c) => new TelnyxNumbers(c)],
    ['twilio', (c) => new TwilioNumbers(c)],
    ['vonage', (c) => new VonageNumbers(c)],
  ];
  /**
   * The numbers flow as the app runs it: search; order; a Telnyx order stays pending and settles
   * later, so it is asked about as the poll asks (by our reference while the carrier's order id
   * is unknown, then by that id) once the carrier completed it; the carrier's id of the bought
   * number, from the order or (Telnyx, whose orders name only their lines) from the documented
   * lookup; the numbers held; release by that id.
   */
  it.each(providers)('%s numbers: search, order (and its status), carrier id lookup, list, release by id', async (name, make) => {
    const provider = make(loadConfig(numbers.env()));
    const offered = await provider.search({ country: 'US', areaCode: '312', contains: '555', features: ['sms', 'voice'], limit: 5 });
    expect(offered.length).toBeGreaterThan(0);
    const phoneNumber = offered.find((n) => !numbers.held.has(n.phoneNumber))!.phoneNumber;
    const orderId = randomUUID();
    numbers.telnyxAsync = true;
    let placement = await provider.order(orderId, 'US', [phoneNumber]).finally(() => (numbers.telnyxAsync = false));
    if (name === 'telnyx') {
      expect(placement).toEqual({ outcome: 'pending', carrierOrderId: expect.any(String) });
      const carrierOrderId = (placement as { carrierOrderId: string }).carrierOrderId;
      await expect(provider.orderStatus({ orderId })).resolves.toEqual({ outcome: 'pending', carrierOrderId });
      numbers.completeTelnyxOrder(carrierOrderId, 'success');
      placement = await provider.orderStatus({ orderId, carrierOrderId });
    }
    expect(placement).toMatchObject({ outcome: 'settled', numbers: [{ phoneNumber, bought: true }] });
    const found = await provider.findHeld(phoneNumber);
    expect(found).toMatchObject({ phoneNumber, carrierNumberId: expect.any(String) });
    const ordered = placement.outcome === 'settled' ? placement.numbers[0].carrierNumberId : undefined;
    if (ordered) expect(found!.carrierNumberId).toBe(ordered);
    expect((await provider.listHeld()).map((n) => n.phoneNumber)).toContain(phoneNumber);
    await provider.release({ phoneNumber, carrierNumberId: found!.carrierNumberId!, country: 'US' });
    expect(numbers.released).toContain(phoneNumber);
    expectConformant(numbers.contract, `${name} numbers`);
  });

  it('the operations exercised above are every operation src/carriers can call (read from the paths it builds)', () => {
    const exercised = new Set([...carrier.contract.exercised, ...numbers.contract.exercised, ...calls.contract.exercised]);
    expect([...exercised].sort()).toEqual([...new Set(CALLED_OPERATIONS.map((o) => o.operation))].sort());

    const files = readdirSync(CARRIERS, { recursive: true, encoding: 'utf8' })
      .filter((f) => /^(telnyx|twilio|vonage)\/[^/]+\.ts$/.test(f));
    const built = files.flatMap((file) => builtPaths(file).map((literal) => `${file} ${literal}`)).sort();
    const declared = [...new Set([...CALLED_OPERATIONS, ...BASE_LITERALS].map((o) => `${o.source} ${o.literal}`))].sort();
    expect(built).toEqual(declared);

    // `/calls/{}/actions/{}` is every action of CallCommand but `dial`: each must be a declared operation.
    const actions = [...readFileSync(new URL('call-control.ts', CARRIERS), 'utf8').matchAll(/action: '(\w+)'/g)].map((m) => m[1]).filter((a) => a !== 'dial');
    const declaredActions = CALLED_OPERATIONS.map((o) => /\/actions\/(\w+)$/.exec(o.operation)?.[1]).filter(Boolean);
    expect(actions.sort()).toEqual(declaredActions.sort());
  });
});
