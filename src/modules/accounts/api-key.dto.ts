import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** An API key as the REST API shows it: never the key itself, only its first characters. */
@ApiSchema({ name: 'ApiKey' })
export class ApiKeyView {
  @ApiProperty({ example: 'key_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['api_key'] }) record_type!: 'api_key';
  @ApiProperty({ example: 'olk_Xa81Qz', description: 'The first characters of the key, to recognise it' }) prefix!: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null }) revoked_at!: string | null;
}
