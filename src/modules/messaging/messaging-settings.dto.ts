import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsObject, IsOptional, IsString, Length, ValidateIf, ValidateNested } from 'class-validator';
import { HELP_KEYWORDS, OPT_IN_KEYWORDS, OPT_OUT_KEYWORDS } from './opt-out-keywords.js';

export const OPT_OUT_SCOPES = ['number', 'account'] as const;
export type OptOutScope = (typeof OPT_OUT_SCOPES)[number];
/** A keyword reply: one to three segments of GSM-7 (480 characters). */
export const MAX_REPLY_LENGTH = 480;

const replyText = (kind: string) =>
  ApiPropertyOptional({ type: 'string', nullable: true, minLength: 1, maxLength: MAX_REPLY_LENGTH, description: `The reply to ${kind}; null: back to the default text` });

export class KeywordRepliesDto {
  @replyText('an opt-out keyword (STOP, ...)')
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsString({ message: 'opt_out must be a string or null' }) @Length(1, MAX_REPLY_LENGTH, { message: `opt_out must be 1 to ${MAX_REPLY_LENGTH} characters` })
  opt_out?: string | null;

  @replyText('an opt-in keyword (START, ...)')
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsString({ message: 'opt_in must be a string or null' }) @Length(1, MAX_REPLY_LENGTH, { message: `opt_in must be 1 to ${MAX_REPLY_LENGTH} characters` })
  opt_in?: string | null;

  @replyText('HELP or INFO')
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsString({ message: 'help must be a string or null' }) @Length(1, MAX_REPLY_LENGTH, { message: `help must be 1 to ${MAX_REPLY_LENGTH} characters` })
  help?: string | null;
}

export class UpdateMessagingSettingsDto {
  @ApiPropertyOptional({
    enum: OPT_OUT_SCOPES,
    description: 'number: a keyword counts for the number it was texted to; account: for every number of the account. Opt-outs already recorded are carried over by the change, never dropped.',
  })
  @IsOptional() @IsIn(OPT_OUT_SCOPES, { message: `opt_out_scope must be one of: ${OPT_OUT_SCOPES.join(', ')}` })
  opt_out_scope?: OptOutScope;

  @ApiPropertyOptional({ type: KeywordRepliesDto, description: 'Reply texts to set (a string) or reset to the default (null); one left out is kept' })
  @IsOptional() @IsObject({ message: 'keyword_replies must be an object' }) @ValidateNested() @Type(() => KeywordRepliesDto)
  keyword_replies?: KeywordRepliesDto;
}

@ApiSchema({ name: 'KeywordReply' })
export class KeywordReplyView {
  @ApiProperty({ example: 'You have been unsubscribed. Reply START to resubscribe.' }) text!: string;
  @ApiProperty({ example: true, description: 'The default text (none of your own is set)' }) default!: boolean;
}

@ApiSchema({ name: 'KeywordReplies' })
export class KeywordRepliesView {
  @ApiProperty({ type: KeywordReplyView }) opt_out!: KeywordReplyView;
  @ApiProperty({ type: KeywordReplyView }) opt_in!: KeywordReplyView;
  @ApiProperty({ type: KeywordReplyView }) help!: KeywordReplyView;
}

@ApiSchema({ name: 'Keywords' })
export class KeywordsView {
  @ApiProperty({ type: [String], example: [...OPT_OUT_KEYWORDS] }) opt_out!: string[];
  @ApiProperty({ type: [String], example: [...OPT_IN_KEYWORDS] }) opt_in!: string[];
  @ApiProperty({ type: [String], example: [...HELP_KEYWORDS] }) help!: string[];
}

/** The account's opt-out settings (GET /v2/messaging_settings). */
@ApiSchema({ name: 'MessagingSettings' })
export class MessagingSettingsView {
  @ApiProperty({ enum: ['messaging_settings'] }) record_type!: 'messaging_settings';
  @ApiProperty({ enum: OPT_OUT_SCOPES, example: 'number' }) opt_out_scope!: OptOutScope;
  @ApiProperty({ type: KeywordRepliesView }) keyword_replies!: KeywordRepliesView;
  @ApiProperty({ type: KeywordsView, description: 'The keywords recognized on inbound SMS: the whole message, trimmed, in any case' }) keywords!: KeywordsView;
}
