import { randomInt, randomUUID } from 'node:crypto';

export type SandboxCarrier = 'telnyx' | 'twilio' | 'vonage';

/** Counters of the numbers emulation (GET /sandbox/stats → `numbers`). */
export interface NumberStats {
  searches: number;
  /** Purchase requests (a Telnyx order counts one per number). */
  purchases: number;
  bought: number;
  /** A purchase of a number our carrier account already held: must stay 0. */
  bought_twice: number;
  /** Refused by the failure rate (the number "sold to someone else"). */
  refused: number;
  /** Purchases that happened but whose answer was cut off (lost-answer mode). */
  lost_answers: number;
  released: number;
}

export interface HeldNumber {
  carrier: SandboxCarrier;
  /** The carrier's id of the number (Telnyx IntId, Twilio PN sid, Vonage msisdn). */
  id: string;
  /** Where the carrier would send the number's webhooks (connection, messaging profile, URLs, application). */
  config: Record<string, string>;
}

const emptyStats = (): NumberStats => ({ searches: 0, purchases: 0, bought: 0, bought_twice: 0, refused: 0, lost_answers: 0, released: 0 });

/**
 * The carriers' number inventory as the sandbox keeps it (one carrier account per carrier):
 * what is offered, what is held, and the chaos of buying: a failure rate (a number sold to
 * someone else between search and order) and a lost-answer rate (the purchase happens, its answer
 * is cut off). Carrier shapes live in the routes beside it (telnyx-, twilio-, vonage-numbers.ts).
 */
export class SandboxNumbers {
  readonly held = new Map<string, HeldNumber>();
  stats = emptyStats();

  constructor(
    /** Percent of purchases refused. */
    public failurePercent: number,
    /** Percent of purchase answers lost after the purchase happened. */
    public lostAnswerPercent: number,
    /** How long a Telnyx order stays pending before it completes (and its webhook is sent). */
    readonly telnyxOrderDelayMs: number,
  ) {}

  resetStats(): void {
    this.stats = emptyStats();
  }

  /**
   * Up to `limit` free numbers of the area code (default 312) whose E.164 digits pass `match`,
   * from a random place in the range.
   */
  offer(limit: number, areaCode = '312', match: (digits: string) => boolean = () => true): string[] {
    const found: string[] = [];
    const start = randomInt(0, 10_000);
    for (let i = 0; i < 10_000 && found.length < limit; i++) {
      const number = `+1${areaCode.padEnd(3, '5').slice(0, 3)}555${String((start + i) % 10_000).padStart(4, '0')}`;
      if (!this.held.has(number) && match(number.slice(1))) found.push(number);
    }
    this.stats.searches++;
    return found;
  }

  /** Buys a number for the carrier account; false when refused (or already held: counted in bought_twice). */
  buy(carrier: SandboxCarrier, phoneNumber: string, config: Record<string, string>): boolean {
    this.stats.purchases++;
    if (this.held.has(phoneNumber)) {
      this.stats.bought_twice++;
      return false;
    }
    if (randomInt(0, 100) < this.failurePercent) {
      this.stats.refused++;
      return false;
    }
    // Telnyx phone number ids are integers as strings (its IntId), unlike its order ids (uuid).
    const id = carrier === 'twilio' ? `PN${randomUUID().replace(/-/g, '')}` : carrier === 'vonage' ? phoneNumber.slice(1) : String(randomInt(1, 2 ** 47)).padStart(19, '1');
    this.held.set(phoneNumber, { carrier, id, config });
    this.stats.bought++;
    return true;
  }

  /** Whether this purchase's answer is to be lost (the connection cut after the purchase). */
  loseAnswer(): boolean {
    if (randomInt(0, 100) >= this.lostAnswerPercent) return false;
    this.stats.lost_answers++;
    return true;
  }

  heldBy(carrier: SandboxCarrier, match: (phoneNumber: string) => boolean = () => true): [string, HeldNumber][] {
    return [...this.held.entries()].filter(([n, h]) => h.carrier === carrier && match(n));
  }

  /** Releases the carrier's number with this id; false when it holds no such number. */
  release(carrier: SandboxCarrier, id: string): boolean {
    const found = this.heldBy(carrier).find(([, h]) => h.id === id);
    if (!found) return false;
    this.held.delete(found[0]);
    this.stats.released++;
    return true;
  }
}
