import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomInt } from 'node:crypto';
import pg from 'pg';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks.js';
import { pausePoint } from '../../support/pause.js';
import { newCallSid, twiml, TwilioVoiceCaller } from '../../support/twilio-voice.js';
import { VoicePipeline } from '../../support/voice-pipeline.js';
import { waitFor } from '../../support/wait.js';

const RINGING = '+15557820100';
const T0 = '+15557820001';
const CALLER = '+13125550198';

/**
 * Issue 24, item 8: two identical Twilio voice requests (the same signature, so the same nonce)
 * at the same instant. The insert's conflict target is (carrier, carrier_event_id) and the
 * signature nonce has its own unique index: the copy must still be answered 200 with the first
 * one's TwiML, never 400 "this signature was already used by a different delivery".
 */
describe('Twilio Voice: identical requests at the same instant, and the signature-nonce index', () => {
  let voice: VoicePipeline;
  let twilio: TwilioVoiceCaller;
  let base: string;

  beforeAll(async () => {
    voice = await VoicePipeline.start();
    twilio = new TwilioVoiceCaller(voice.app);
    base = voice.app.config.publicBaseUrl;
    const created = await voice.customer.post('/v2/phone_numbers', { phone_number: RINGING, carrier: 'twilio' });
    expect(created.status).toBe(201);
    const ring = { ring_plan: { targets: [{ to: T0, timeout_secs: 15 }], fallback: { action: 'hangup' } } };
    expect((await voice.customer.request('PATCH', `/v2/phone_numbers/${created.body.data.id}`, { voice: ring })).status).toBe(200);
  });

  afterAll(async () => {
    await voice.stop();
  });

  /** The calls and stored events of one CallSid: exactly one of each, answered with `reply`. */
  async function expectOneCall(sid: string, reply: string): Promise<void> {
    const { rows: calls } = await voice.db.pool.query<{ id: string }>(`SELECT id FROM calls WHERE carrier = 'twilio' AND carrier_call_id = $1`, [sid]);
    expect(calls).toHaveLength(1);
    expect(reply).toBe(twiml.dial(base, calls[0]!.id, 0, T0, 15));
    expect(await voice.db.count(`SELECT count(*) FROM carrier_events WHERE carrier_event_id = $1 AND reply = $2`, [`${sid}:incoming:ringing`, reply])).toBe(1);
    expect(await voice.db.count(`SELECT count(*) FROM call_legs WHERE call_id = $1`, [calls[0]!.id])).toBe(1);
  }

  it('the copy arrives while the first is held after its INSERT: it waits on that row and gets the same TwiML', async () => {
    const sid = newCallSid();
    const pause = await pausePoint(voice.db.url, { table: 'carrier_events', on: 'INSERT', when: `NEW.carrier_event_id = '${sid}:incoming:ringing'` });
    await pause.hold();
    try {
      const held = twilio.incoming(sid, CALLER, RINGING);
      await pause.waitUntilPaused();
      const copy = twilio.incoming(sid, CALLER, RINGING);
      await waitFor(() => lockWaiters(voice, ['transactionid', 'tuple']), (n) => n >= 1, { what: 'the copy to wait on the held row' });
      await pause.release();
      const [a, b] = await Promise.all([held, copy]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(b.body).toBe(a.body);
      await expectOneCall(sid, a.body);
    } finally {
      await pause.remove();
    }
  }, 60_000);

  it('both pass the conflict target\'s check before either row is indexed; the first commits, then the copy reaches the nonce index: still 200, the same TwiML, one row', async () => {
    const sid = newCallSid();
    const gate = await insertGate(voice.db.url, `${sid}:incoming:ringing`);
    try {
      const first = twilio.incoming(sid, CALLER, RINGING);
      await gate.waitUntilHeld('first');
      const copy = twilio.incoming(sid, CALLER, RINGING);
      // the copy passed the (carrier, carrier_event_id) check too: the first's key is not indexed yet
      await gate.waitUntilHeld('second');
      await gate.release('first');
      const a = await first;
      expect(a.status).toBe(200);
      // the first has committed; the copy now indexes its nonce, which the first already holds
      await gate.release('second');
      const b = await copy;
      expect([b.status, b.body]).toEqual([200, a.body]);
      await expectOneCall(sid, a.body);
    } finally {
      await gate.remove();
    }
  }, 60_000);

  it('a different delivery under a signature already stored (a nonce-only collision) is still refused 400, with no call', async () => {
    const sid = newCallSid();
    const fields = { CallSid: sid, AccountSid: 'AC00000000000000000000000000000000', From: CALLER, To: RINGING, CallStatus: 'ringing', Direction: 'inbound' };
    const signature = getExpectedTwilioSignature(voice.app.config.twilioWebhookAuthToken!, `${base}/webhooks/twilio/voice`, fields);
    // a row stored under another dedupe key with this very signature
    await voice.db.pool.query(
      `INSERT INTO carrier_events (id, carrier, carrier_event_id, event_type, kind, payload, normalized, signature_nonce)
       VALUES ('cev_planted_nonce', 'twilio', 'planted-other-key', 'planted', 'call.initiated', '{}', '{}', $1)`,
      [signature],
    );
    const refused = await twilio.post('/webhooks/twilio/voice', fields, signature);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).errors[0].detail).toMatch(/signature was already used/);
    expect(await voice.db.count(`SELECT count(*) FROM calls WHERE carrier_call_id = $1`, [sid])).toBe(0);
  }, 60_000);
});

/** Transactions of this database waiting on a lock of one of these types. */
function lockWaiters(voice: VoicePipeline, types: string[]): Promise<number> {
  return voice.db.count(
    `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = ANY($1::text[])
        AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database())`,
    [types],
  );
}

/**
 * A pause point where a trigger cannot reach: inside an INSERT, after its ON CONFLICT check on the
 * arbiter index and before its index entries are written. Postgres writes a row's index entries
 * in index OID order, so the test adds a partial index whose predicate waits on an advisory lock,
 * and re-creates the two unique indexes after it. The first inserting transaction waits on the
 * `first` lock, the next on the `second` (the first holds a marker lock until it ends).
 */
async function insertGate(databaseUrl: string, carrierEventId: string) {
  const [marker, first, second] = [randomInt(1, 2 ** 31 - 1), randomInt(1, 2 ** 31 - 1), randomInt(1, 2 ** 31 - 1)];
  const keys = { first, second };
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const literal = carrierEventId.replace(/'/g, "''");
  // IMMUTABLE is a lie Postgres lets a predicate tell; it indexes nothing (returns false).
  await client.query(`
    CREATE FUNCTION test_insert_gate(cev text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
    BEGIN
      IF cev = '${literal}' THEN
        IF pg_try_advisory_xact_lock(${marker}) THEN PERFORM pg_advisory_xact_lock(${first});
        ELSE PERFORM pg_advisory_xact_lock(${second}); END IF;
      END IF;
      RETURN false;
    END $$;
    CREATE INDEX test_insert_gate_idx ON carrier_events (id) WHERE test_insert_gate(carrier_event_id);
    ALTER TABLE carrier_events DROP CONSTRAINT carrier_events_carrier_carrier_event_id_key;
    ALTER TABLE carrier_events ADD CONSTRAINT carrier_events_carrier_carrier_event_id_key UNIQUE (carrier, carrier_event_id);
    DROP INDEX carrier_events_nonce_idx;
    CREATE UNIQUE INDEX carrier_events_nonce_idx ON carrier_events (carrier, signature_nonce) WHERE signature_nonce IS NOT NULL;
  `);
  const { rows } = await client.query(`SELECT indexrelid::regclass::text AS name FROM pg_index WHERE indrelid = 'carrier_events'::regclass ORDER BY indexrelid`);
  const order = rows.map((r) => r.name as string);
  // the gate comes before both unique indexes, or this test proves nothing
  expect(order.indexOf('test_insert_gate_idx')).toBeLessThan(order.indexOf('carrier_events_carrier_carrier_event_id_key'));
  expect(order.indexOf('test_insert_gate_idx')).toBeLessThan(order.indexOf('carrier_events_nonce_idx'));
  await client.query('SELECT pg_advisory_lock($1), pg_advisory_lock($2)', [first, second]);
  const held = { first: true, second: true };
  const waitingOn = async (key: number) => {
    const { rows: waiting } = await client.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`, [key]);
    return waiting[0].n as number;
  };
  const release = async (which: 'first' | 'second') => {
    if (!held[which]) return;
    await client.query('SELECT pg_advisory_unlock($1)', [keys[which]]);
    held[which] = false;
  };
  return {
    waitUntilHeld: (which: 'first' | 'second') => waitFor(() => waitingOn(keys[which]), (n) => n >= 1, { what: `the ${which} insert to wait at the gate` }),
    release,
    async remove() {
      await release('first');
      await release('second');
      await client.query('DROP INDEX IF EXISTS test_insert_gate_idx; DROP FUNCTION IF EXISTS test_insert_gate(text)');
      await client.end();
    },
  };
}
