import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { AppConfig } from '../config/app-config.js';
import { redisConnection } from './redis-connection.js';

/**
 * The process's one shared producer connection to Redis (queue adds, rate limits, readiness),
 * opened on first use and closed at shutdown. Redis only carries work: nothing here is a source
 * of truth. BullMQ workers open their own blocking connections with `redisConnection`.
 */
@Injectable()
export class RedisService implements OnApplicationShutdown {
  private connection?: Redis;

  constructor(private readonly config: AppConfig) {}

  shared(): Redis {
    this.connection ??= redisConnection(this.config.REDIS_URL, 'producer');
    return this.connection;
  }

  async ping(): Promise<boolean> {
    return (await this.shared().ping()) === 'PONG';
  }

  onApplicationShutdown(): void {
    this.connection?.disconnect();
  }
}
