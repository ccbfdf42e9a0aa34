import { Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { inboundWebhook, type RawRequest } from '../../carriers/inbound-webhook.js';
import { TelnyxAdapter } from '../../carriers/telnyx/telnyx-adapter.js';
import { TwilioAdapter } from '../../carriers/twilio/twilio-adapter.js';
import { VonageAdapter } from '../../carriers/vonage/vonage-adapter.js';
import { IngestService } from './ingest.service.js';

/**
 * Carrier webhooks: no API key, the signature is the authentication (docs/contract.md, "Carrier
 * webhooks"). Twilio Voice, answered in the request, is Calls' (VoiceWebhooksController).
 */
@ApiExcludeController()
@Controller('webhooks')
export class IngestController {
  constructor(
    private readonly ingest: IngestService,
    private readonly telnyx: TelnyxAdapter,
    private readonly twilio: TwilioAdapter,
    private readonly vonage: VonageAdapter,
  ) {}

  @Post('telnyx')
  @HttpCode(200)
  async telnyxWebhook(@Req() req: RawRequest) {
    return { status: await this.ingest.ingest(this.telnyx, inboundWebhook(req)) };
  }

  @Post('twilio/messaging')
  @HttpCode(200)
  async twilioMessaging(@Req() req: RawRequest) {
    return { status: await this.ingest.ingest(this.twilio, inboundWebhook(req, 'messaging')) };
  }

  @Post('vonage/messages')
  @HttpCode(200)
  async vonageMessages(@Req() req: RawRequest) {
    return { status: await this.ingest.ingest(this.vonage, inboundWebhook(req)) };
  }
}
