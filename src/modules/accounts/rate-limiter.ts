import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { RedisService } from '../../platform/redis/redis.service.js';

export interface RateDecision {
  allowed: boolean;
  retryAfterSeconds: number;
}

/**
 * Fixed one-minute windows per API key (requests) and per client address (failed
 * authentications), counted in Redis so every API process shares it.
 * Redis is not a source of truth: when it is away, requests are allowed (fail open).
 */
@Injectable()
export class RateLimiter {
  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisService,
  ) {}

  /** One request of an authenticated key. */
  check(apiKeyId: string, nowMs = Date.now()): Promise<RateDecision> {
    return this.count(`ratelimit:${apiKeyId}`, this.config.API_RATE_LIMIT_PER_MINUTE, nowMs);
  }

  /** One failed authentication from a client address (key guessing is throttled per address). */
  authFailure(address: string, nowMs = Date.now()): Promise<RateDecision> {
    return this.count(`authfail:${address}`, this.config.API_AUTH_FAILURES_PER_MINUTE, nowMs);
  }

  private async count(name: string, limit: number, nowMs: number): Promise<RateDecision> {
    const window = Math.floor(nowMs / 60_000);
    const retryAfterSeconds = Math.max(1, Math.ceil(((window + 1) * 60_000 - nowMs) / 1000));
    try {
      const key = `${this.config.QUEUE_PREFIX}:${name}:${window}`;
      const [[, count]] = (await this.redis.shared().multi().incr(key).expire(key, 120).exec()) as [[unknown, number]];
      return { allowed: count <= limit, retryAfterSeconds };
    } catch {
      return { allowed: true, retryAfterSeconds };
    }
  }
}
