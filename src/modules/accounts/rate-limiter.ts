import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../platform/config/app-config.js';
import { RedisService } from '../../platform/redis/redis.service.js';

export interface RateDecision {
  allowed: boolean;
  retryAfterSeconds: number;
}

/**
 * Fixed one-minute window per API key, counted in Redis so every API process shares it.
 * Redis is not a source of truth: when it is away, requests are allowed (fail open).
 */
@Injectable()
export class RateLimiter {
  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisService,
  ) {}

  async check(apiKeyId: string, nowMs = Date.now()): Promise<RateDecision> {
    const window = Math.floor(nowMs / 60_000);
    const retryAfterSeconds = Math.max(1, Math.ceil(((window + 1) * 60_000 - nowMs) / 1000));
    try {
      const key = `${this.config.QUEUE_PREFIX}:ratelimit:${apiKeyId}:${window}`;
      const [[, count]] = (await this.redis.shared().multi().incr(key).expire(key, 120).exec()) as [[unknown, number]];
      return { allowed: count <= this.config.API_RATE_LIMIT_PER_MINUTE, retryAfterSeconds };
    } catch {
      return { allowed: true, retryAfterSeconds };
    }
  }
}
