/**
 * A carrier's throughput limit per sending number, as the sandbox enforces it: a token bucket of
 * `rate` message segments per second holding at most one second's worth (at least one message),
 * so a sender that spaces its sends by segments / rate is never refused, and a burst past it is
 * answered 429 with Retry-After. Off (rate 0) unless SANDBOX_SEND_RATE_PER_NUMBER or
 * POST /sandbox/throughput sets it.
 */
export class SenderThroughput {
  /** Segments per second for every number without its own limit; 0: no limit. */
  perNumber: number;
  /** Limits of particular numbers (E.164), overriding perNumber; 0: no limit for that number. */
  readonly numbers = new Map<string, number>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(perNumber: number) {
    this.perNumber = perNumber;
  }

  limitOf(from: string): number {
    return this.numbers.get(from) ?? this.perNumber;
  }

  /**
   * Takes `parts` segments from `from`'s bucket: undefined when the send may go, else the whole
   * seconds to wait before the bucket holds them (Retry-After, at least 1).
   */
  take(from: string, parts: number, now = performance.now()): number | undefined {
    const rate = this.limitOf(from);
    if (rate <= 0) return undefined;
    const capacity = Math.max(rate, parts, 1);
    const bucket = this.buckets.get(from) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    this.buckets.set(from, bucket);
    if (bucket.tokens >= parts) {
      bucket.tokens -= parts;
      return undefined;
    }
    return Math.max(1, Math.ceil((parts - bucket.tokens) / rate));
  }

  /** Settings as GET /sandbox/throughput shows them. */
  describe(): { per_number: number; numbers: Record<string, number> } {
    return { per_number: this.perNumber, numbers: Object.fromEntries(this.numbers) };
  }

  /** Forgets every bucket (a new limit starts full). */
  reset(): void {
    this.buckets.clear();
  }
}

/** A limit as the control route and the environment take it: a number of segments per second from 0 (off) to 100000. */
export function isValidThroughput(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 100_000;
}
