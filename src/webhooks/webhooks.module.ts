import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module.js';
import { CustomerEvents } from './customer-events.js';

/** Customer webhooks: events written with the change, endpoints, signed delivery with retries. */
@Module({
  imports: [OutboxModule],
  providers: [CustomerEvents],
  exports: [CustomerEvents],
})
export class WebhooksModule {}
