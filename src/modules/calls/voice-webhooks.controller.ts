import { Controller, Header, HttpCode, Post, Req } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { InboundWebhook } from '../../carriers/carrier-adapter.js';
import { TwilioAdapter } from '../../carriers/twilio/twilio-adapter.js';
import { TwilioTwiml } from '../../carriers/twilio/twilio-twiml.js';
import { inboundWebhook, type RawRequest } from '../../carriers/inbound-webhook.js';
import { IngestService } from '../ingest/ingest.service.js';
import { CallReplies } from './call-replies.js';

/**
 * Twilio Voice asks our URL what to do and follows the TwiML in the response (JSON there is its
 * error 12300), so these webhooks are decided in the request: Ingest verifies and stores the
 * event, CallReplies decides in that transaction, and a repeat is answered with the stored reply.
 * Refusals (401, 400, 503) are JSON like every carrier webhook's; Twilio then plays its fallback.
 */
@ApiExcludeController()
@Controller('webhooks/twilio/voice')
export class VoiceWebhooksController {
  constructor(
    private readonly ingest: IngestService,
    private readonly twilio: TwilioAdapter,
    private readonly twiml: TwilioTwiml,
    private readonly replies: CallReplies,
  ) {}

  /** The incoming call: the call row and the first <Dial> (or <Reject/>). */
  @Post()
  @HttpCode(200)
  @Header('content-type', 'text/xml')
  incoming(@Req() req: RawRequest): Promise<string> {
    return this.answer(req, 'voice');
  }

  /** A <Dial>'s action: the next <Dial>, the fallback, or <Hangup/>. */
  @Post('dial')
  @HttpCode(200)
  @Header('content-type', 'text/xml')
  dial(@Req() req: RawRequest): Promise<string> {
    return this.answer(req, 'voice.dial');
  }

  /** Status callbacks: a final status ends the call; the answer is always <Response/>. */
  @Post('status')
  @HttpCode(200)
  @Header('content-type', 'text/xml')
  async status(@Req() req: RawRequest): Promise<string> {
    await this.answer(req, 'voice.status');
    return this.twiml.render({ kind: 'nothing' });
  }

  /** The voicemail's <Record> action: the recording is kept, then <Hangup/>. */
  @Post('recording')
  @HttpCode(200)
  @Header('content-type', 'text/xml')
  recording(@Req() req: RawRequest): Promise<string> {
    return this.answer(req, 'voice.recording');
  }

  private async answer(req: RawRequest, channel: InboundWebhook['channel']): Promise<string> {
    const { reply } = await this.ingest.answer(this.twilio, inboundWebhook(req, channel), async (event, tx, context) => {
      const decided = await this.replies.decide(event, tx, context);
      return { reply: this.twiml.render(decided.reply), note: decided.note };
    });
    // A row stored before replies were kept (the call flow did not exist then): nothing to add.
    return reply ?? this.twiml.render({ kind: 'nothing' });
  }
}
