import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsIn, IsOptional, Matches } from 'class-validator';
import { NUMBER_FEATURES, type NumberFeature } from '../../carriers/number-provider.js';
import { CARRIER_NAMES, type CarrierName } from '../../carriers/carrier-name.js';
import { E164_MESSAGE, E164_PATTERN } from '../../telephony/e164.js';
import { NUMBER_STATUSES, type NumberStatus } from './phone-number.dto.js';

export const MAX_NUMBERS_PER_ORDER = 10;
export const COUNTRY_PATTERN = /^[A-Z]{2}$/;

export class PlaceNumberOrderDto {
  @ApiProperty({ enum: CARRIER_NAMES, example: 'telnyx', description: 'The carrier the numbers were found at (GET /v2/available_phone_numbers)' })
  @IsIn(CARRIER_NAMES)
  carrier!: CarrierName;

  @ApiProperty({ type: [String], example: ['+13125550143'], minItems: 1, maxItems: MAX_NUMBERS_PER_ORDER, description: 'E.164 numbers from a search' })
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(MAX_NUMBERS_PER_ORDER) @ArrayUnique()
  @Matches(E164_PATTERN, { each: true, message: `each phone_numbers entry ${E164_MESSAGE}` })
  phone_numbers!: string[];

  @ApiPropertyOptional({ example: 'US', default: 'US', description: 'ISO 3166-1 alpha-2 country of the numbers' })
  @IsOptional() @Matches(COUNTRY_PATTERN, { message: 'country must be an ISO 3166-1 alpha-2 code such as US' })
  country?: string;
}

@ApiSchema({ name: 'NumberOrderPhoneNumber' })
export class NumberOrderPhoneNumber {
  @ApiProperty({ example: 'num_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'The number, as GET /v2/phone_numbers/{id} shows it once active' }) id!: string;
  @ApiProperty({ example: '+13125550143' }) phone_number!: string;
  @ApiProperty({ enum: NUMBER_STATUSES, example: 'ordering' }) status!: NumberStatus;
}

export const ORDER_STATUSES = ['pending', 'success', 'failed'] as const;

/** An order of numbers at a carrier. */
@ApiSchema({ name: 'NumberOrder' })
export class NumberOrderView {
  @ApiProperty({ example: 'ord_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['phone_number_order'] }) record_type!: 'phone_number_order';
  @ApiProperty({ enum: CARRIER_NAMES, example: 'telnyx' }) carrier!: CarrierName;
  @ApiProperty({
    enum: ORDER_STATUSES,
    example: 'pending',
    description: 'pending until the carrier settles it (Telnyx: asynchronously); success when at least one number was bought (each number says), failed when none was',
  })
  status!: (typeof ORDER_STATUSES)[number];
  @ApiProperty({ type: [NumberOrderPhoneNumber] }) phone_numbers!: NumberOrderPhoneNumber[];
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Why the carrier bought nothing' }) error!: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null }) completed_at!: string | null;
}

/** A number a carrier offers, with what renting it costs here. */
@ApiSchema({ name: 'AvailablePhoneNumber' })
export class AvailablePhoneNumberView {
  @ApiProperty({ enum: ['available_phone_number'] }) record_type!: 'available_phone_number';
  @ApiProperty({ example: '+13125550143' }) phone_number!: string;
  @ApiProperty({ enum: CARRIER_NAMES, example: 'telnyx' }) carrier!: CarrierName;
  @ApiProperty({ enum: NUMBER_FEATURES, isArray: true, example: ['sms', 'voice'] }) features!: NumberFeature[];
  @ApiProperty({ type: String, nullable: true, example: 'IL' }) region!: string | null;
  @ApiProperty({ type: 'integer', example: 1000000, description: 'Monthly rental in micro-units of currency, billed once per calendar month (not prorated)' })
  monthly_price_micros!: number;
  @ApiProperty({ example: 'USD' }) currency!: string;
}
