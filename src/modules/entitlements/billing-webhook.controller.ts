import { Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { inboundWebhook, type RawRequest } from '../../carriers/inbound-webhook.js';
import { BillingWebhookService } from './billing-webhook.service.js';

/** Billing-provider webhooks: no API key, the signature is the authentication (docs/contract.md, Entitlements). */
@ApiExcludeController()
@Controller('webhooks/billing')
export class BillingWebhookController {
  constructor(private readonly webhooks: BillingWebhookService) {}

  @Post('stripe')
  @HttpCode(200)
  async stripe(@Req() req: RawRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    // The exact bytes Stripe signed (createApp keeps them: rawBody), not the parsed body.
    const answer = await this.webhooks.receiveStripe(inboundWebhook(req));
    reply.status(answer.status);
    if (answer.retryAfterSeconds !== undefined) reply.header('retry-after', String(answer.retryAfterSeconds));
    return answer.body;
  }
}
