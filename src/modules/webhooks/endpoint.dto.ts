import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayUnique, IsArray, IsIn, IsOptional, IsString, MaxLength, ValidateIf } from 'class-validator';
import { CUSTOMER_EVENT_TYPES, type CustomerEventType } from './event-types.js';

/** A delivery's statuses (the webhook_deliveries CHECK constraint has the same list). */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'parked'] as const;

export class CreateEndpointDto {
  @ApiProperty({ example: 'https://example.com/webhooks/onceline', description: 'http or https, no credentials; must resolve to a public address' })
  @IsString() @MaxLength(2048)
  url!: string;

  @ApiPropertyOptional({ enum: CUSTOMER_EVENT_TYPES, isArray: true, example: ['message.delivered', 'message.failed'], description: 'Omit to receive every type' })
  @IsOptional() @IsArray() @ArrayUnique() @IsIn(CUSTOMER_EVENT_TYPES, { each: true, message: `each value in event_types must be one of: ${CUSTOMER_EVENT_TYPES.join(', ')}` })
  event_types?: CustomerEventType[];

  @ApiPropertyOptional({ example: 'Production receiver' })
  @IsOptional() @IsString() @MaxLength(500)
  description?: string;
}

export class UpdateEndpointDto {
  @ApiPropertyOptional({ example: 'https://example.com/webhooks/v2' })
  @IsOptional() @IsString() @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({ enum: CUSTOMER_EVENT_TYPES, isArray: true, nullable: true, example: ['call.completed'], description: 'null: every type' })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsArray() @ArrayUnique() @IsIn(CUSTOMER_EVENT_TYPES, { each: true, message: `each value in event_types must be one of: ${CUSTOMER_EVENT_TYPES.join(', ')}` })
  event_types?: CustomerEventType[] | null;

  @ApiPropertyOptional({ example: 'Staging receiver', nullable: true })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsString() @MaxLength(500)
  description?: string | null;
}

export class EndpointView {
  @ApiProperty({ example: 'we_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ example: 'webhook_endpoint' }) record_type!: 'webhook_endpoint';
  @ApiProperty({ example: 'https://example.com/webhooks/onceline' }) url!: string;
  @ApiProperty({ enum: CUSTOMER_EVENT_TYPES, isArray: true, example: ['message.delivered', 'message.failed'] }) event_types!: string[];
  @ApiProperty({ nullable: true, example: 'Production receiver' }) description!: string | null;
  @ApiProperty({ example: true }) enabled!: boolean;
  @ApiProperty({ nullable: true, example: null, description: 'Why the endpoint was disabled (410 Gone, too many consecutive failures)' }) disabled_reason!: string | null;
  @ApiProperty({ example: 0 }) consecutive_failures!: number;
  @ApiProperty({ example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
  @ApiProperty({ example: '2026-11-03T10:15:00.000Z' }) updated_at!: string;
}

export class EndpointWithSecretView extends EndpointView {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'Standard Webhooks signing secret; shown only here and at GET /:id/secret' })
  secret!: string;
}

export class SecretView {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }) secret!: string;
  @ApiProperty({ nullable: true, example: '2026-11-04T10:15:00.000Z', description: 'Until then the previous secret also signs every delivery' })
  previous_secret_expires_at!: string | null;
}

export class AttemptView {
  @ApiProperty({ example: 1 }) attempt!: number;
  @ApiProperty({ nullable: true, example: 500 }) status_code!: number | null;
  @ApiProperty({ nullable: true, example: 'HTTP 500' }) error!: string | null;
  @ApiProperty({ example: 42 }) duration_ms!: number;
  @ApiProperty({ nullable: true, example: 'internal error' }) response_excerpt!: string | null;
  @ApiProperty({ example: '2026-11-03T10:15:01.000Z' }) at!: string;
}

export class DeliveryView {
  @ApiProperty({ example: 'dlv_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ example: 'webhook_delivery' }) record_type!: 'webhook_delivery';
  @ApiProperty({ example: 'evt_01jd5x2m3n4p5q6r7s8t9v0w1x' }) event_id!: string;
  @ApiProperty({ example: 'message.delivered' }) event_type!: string;
  @ApiProperty({ example: 'we_01jd5x2m3n4p5q6r7s8t9v0w1x' }) endpoint_id!: string;
  @ApiProperty({ enum: DELIVERY_STATUSES, example: 'pending' }) status!: string;
  @ApiProperty({ type: [AttemptView] }) attempts!: AttemptView[];
  @ApiProperty({ nullable: true, example: '2026-11-03T10:15:06.000Z' }) next_attempt_at!: string | null;
  @ApiProperty({ nullable: true, example: 'HTTP 500' }) last_error!: string | null;
  @ApiProperty({ example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
  @ApiProperty({ example: '2026-11-03T10:15:01.000Z' }) updated_at!: string;
}

export class EventView {
  @ApiProperty({ example: 'evt_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ example: 'event' }) record_type!: 'event';
  @ApiProperty({ enum: CUSTOMER_EVENT_TYPES, example: 'message.delivered' }) type!: string;
  @ApiProperty({ example: 1 }) event_version!: number;
  @ApiProperty({ example: '2026-11-03T10:15:00.000Z' }) created_at!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, example: { id: 'msg_01jd5x2m3n4p5q6r7s8t9v0w1x', record_type: 'message', status: 'delivered' } }) data!: object;
}

export class EventWithDeliveriesView extends EventView {
  @ApiProperty({ type: [DeliveryView] }) deliveries!: DeliveryView[];
}

class ListMeta {
  @ApiProperty({ nullable: true, example: null, description: 'Pass as page[after] for the next page' }) next_cursor!: string | null;
}

export class EndpointResponse { @ApiProperty({ type: EndpointView }) data!: EndpointView; }
export class EndpointWithSecretResponse { @ApiProperty({ type: EndpointWithSecretView }) data!: EndpointWithSecretView; }
export class EndpointListResponse { @ApiProperty({ type: [EndpointView] }) data!: EndpointView[]; @ApiProperty({ type: ListMeta }) meta!: ListMeta; }
export class SecretResponse { @ApiProperty({ type: SecretView }) data!: SecretView; }
export class DeliveryListResponse { @ApiProperty({ type: [DeliveryView] }) data!: DeliveryView[]; @ApiProperty({ type: ListMeta }) meta!: ListMeta; }
export class EventListResponse { @ApiProperty({ type: [EventView] }) data!: EventView[]; @ApiProperty({ type: ListMeta }) meta!: ListMeta; }
export class EventResponse { @ApiProperty({ type: EventWithDeliveriesView }) data!: EventWithDeliveriesView; }
