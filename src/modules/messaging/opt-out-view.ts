import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** A handset's consent changed by a keyword, or by a carrier's "recipient opted out" (message.opted_out / message.opted_in). */
@ApiSchema({ name: 'OptOut' })
export class OptOutView {
  @ApiProperty({ example: 'msg_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'The inbound message that carried the keyword, or (source carrier) the outbound message the carrier refused because the handset opted out with it: the change is known by it' }) id!: string;
  @ApiProperty({ enum: ['opt_out'] }) record_type!: 'opt_out';
  @ApiProperty({ example: '+15550002222', description: 'The handset that sent the keyword' }) handset!: string;
  @ApiProperty({ type: 'string', nullable: true, example: '+15550001111', description: 'Your number it applies to; null when it applies to every number of the account (scope account)' })
  number!: string | null;
  @ApiProperty({ enum: ['number', 'account'], example: 'number' }) scope!: 'number' | 'account';
  @ApiProperty({ example: true, description: 'true after STOP and its synonyms, false after START, UNSTOP or YES' }) opted_out!: boolean;
  @ApiProperty({ enum: ['keyword', 'carrier'], example: 'keyword', description: "keyword: the handset texted STOP/START to the number; carrier: the carrier refused a send because the handset opted out with the carrier (Twilio 21610, Telnyx 40300, Vonage 1240)" })
  source!: 'keyword' | 'carrier';
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) changed_at!: string;
}
