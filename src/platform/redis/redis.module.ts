import { Global, Module } from '@nestjs/common';
import { RedisService } from './redis.service.js';

/** The shared Redis connection, for any module that needs one (global, like the config). */
@Global()
@Module({ providers: [RedisService], exports: [RedisService] })
export class RedisModule {}
