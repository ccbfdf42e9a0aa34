import { Body, Controller, Get, Patch } from '@nestjs/common';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, DataOf } from '../../platform/http/api-docs.js';
import { MessagingSettingsView, UpdateMessagingSettingsDto } from './messaging-settings.dto.js';
import { MessagingSettings } from './messaging-settings.js';

/** The account's opt-out scope and keyword replies. */
@CustomerApi('Messaging settings')
@Controller('v2/messaging_settings')
export class MessagingSettingsController {
  constructor(private readonly settings: MessagingSettings) {}

  @Get()
  @ApiOperationDoc({ summary: 'Get your opt-out scope, keyword replies and the keywords recognized', ok: DataOf(MessagingSettingsView) })
  async get(@AccountId() accountId: string) {
    return { data: await this.settings.get(accountId) };
  }

  @Patch()
  @ApiOperationDoc({
    summary: 'Set your opt-out scope and keyword replies',
    description:
      '`{"opt_out_scope": "account"}`: a STOP to any of your numbers stops them all (`number`: only the number texted). A scope change carries the opt-outs already recorded into the new scope, never dropping one. `{"keyword_replies": {"opt_out": "...", "help": null}}` sets a reply text or resets it to the default; one left out is kept.',
    body: UpdateMessagingSettingsDto,
    ok: DataOf(MessagingSettingsView),
    errors: [[422, 'Validation failed: an unknown scope, a reply that is not 1 to 480 characters; each errors[] entry names the field']],
  })
  async update(@AccountId() accountId: string, @Body() body: UpdateMessagingSettingsDto) {
    return { data: await this.settings.update(accountId, { scope: body.opt_out_scope, replies: body.keyword_replies }) };
  }
}
