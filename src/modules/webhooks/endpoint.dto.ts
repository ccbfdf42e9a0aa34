import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ArrayUnique, IsArray, IsIn, IsOptional, IsString, MaxLength, ValidateIf } from 'class-validator';
import { CUSTOMER_EVENT_TYPES, type CustomerEventType } from './event-types.js';

/**
 * The event types are declared by the modules that emit them, as they load: the decorators below
 * hold the one CUSTOMER_EVENT_TYPES array (read when a request is validated or the API described),
 * never a copy of it taken before every module loaded.
 */
const eventTypesMessage = () => `each value in event_types must be one of: ${CUSTOMER_EVENT_TYPES.join(', ')}`;

/** A delivery's statuses (the webhook_deliveries CHECK constraint has the same list). */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'parked'] as const;

export class CreateEndpointDto {
  @ApiProperty({ example: 'https://example.com/webhooks/onceline', description: 'http or https, no credentials; must resolve to a public address' })
  @IsString() @MaxLength(2048)
  url!: string;

  @ApiPropertyOptional({ type: 'array', items: { type: 'string', enum: CUSTOMER_EVENT_TYPES as CustomerEventType[] }, example: ['message.delivered', 'message.failed'], description: 'Omit to receive every type' })
  @IsOptional() @IsArray() @ArrayUnique() @IsIn(CUSTOMER_EVENT_TYPES, { each: true, message: eventTypesMessage })
  event_types?: CustomerEventType[];

  @ApiPropertyOptional({ example: 'Production receiver' })
  @IsOptional() @IsString() @MaxLength(500)
  description?: string;
}

export class UpdateEndpointDto {
  @ApiPropertyOptional({ example: 'https://example.com/webhooks/v2' })
  @IsOptional() @IsString() @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({ type: 'array', items: { type: 'string', enum: CUSTOMER_EVENT_TYPES as CustomerEventType[] }, nullable: true, example: ['call.completed'], description: 'null: every type' })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsArray() @ArrayUnique() @IsIn(CUSTOMER_EVENT_TYPES, { each: true, message: eventTypesMessage })
  event_types?: CustomerEventType[] | null;

  @ApiPropertyOptional({ type: 'string', example: 'Staging receiver', nullable: true })
  @ValidateIf((_, v) => v !== null && v !== undefined) @IsString() @MaxLength(500)
  description?: string | null;
}

const at = (example: string) => ({ format: 'date-time', example });

@ApiSchema({ name: 'WebhookEndpoint' })
export class EndpointView {
  @ApiProperty({ example: 'we_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['webhook_endpoint'] }) record_type!: 'webhook_endpoint';
  @ApiProperty({ example: 'https://example.com/webhooks/onceline' }) url!: string;
  @ApiProperty({ type: 'array', items: { type: 'string', enum: CUSTOMER_EVENT_TYPES as CustomerEventType[] }, example: ['message.delivered', 'message.failed'] }) event_types!: string[];
  @ApiProperty({ type: 'string', nullable: true, example: 'Production receiver' }) description!: string | null;
  @ApiProperty({ example: true }) enabled!: boolean;
  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Why the endpoint was disabled (410 Gone, too many consecutive failures)' }) disabled_reason!: string | null;
  @ApiProperty({ type: 'integer', example: 0 }) consecutive_failures!: number;
  @ApiProperty(at('2026-11-03T10:15:00.000Z')) created_at!: string;
  @ApiProperty(at('2026-11-03T10:15:00.000Z')) updated_at!: string;
}

@ApiSchema({ name: 'WebhookEndpointWithSecret' })
export class EndpointWithSecretView extends EndpointView {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'Standard Webhooks signing secret; shown only here and at GET /:id/secret' })
  secret!: string;
}

@ApiSchema({ name: 'WebhookSecret' })
export class SecretView {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }) secret!: string;
  @ApiProperty({ type: 'string', nullable: true, ...at('2026-11-04T10:15:00.000Z'), description: 'Until then the previous secret also signs every delivery' })
  previous_secret_expires_at!: string | null;
}

@ApiSchema({ name: 'DeliveryAttempt' })
export class AttemptView {
  @ApiProperty({ type: 'integer', example: 1 }) attempt!: number;
  @ApiProperty({ type: 'integer', nullable: true, example: 500, description: 'null when no HTTP answer came' }) status_code!: number | null;
  @ApiProperty({ type: 'string', nullable: true, example: 'HTTP 500' }) error!: string | null;
  @ApiProperty({ type: 'integer', example: 42 }) duration_ms!: number;
  @ApiProperty({ type: 'string', nullable: true, example: 'internal error' }) response_excerpt!: string | null;
  @ApiProperty(at('2026-11-03T10:15:01.000Z')) at!: string;
}

@ApiSchema({ name: 'WebhookDelivery' })
export class DeliveryView {
  @ApiProperty({ example: 'dlv_01jd5x2m3n4p5q6r7s8t9v0w1x' }) id!: string;
  @ApiProperty({ enum: ['webhook_delivery'] }) record_type!: 'webhook_delivery';
  @ApiProperty({ example: 'evt_01jd5x2m3n4p5q6r7s8t9v0w1x' }) event_id!: string;
  @ApiProperty({ type: 'string', enum: CUSTOMER_EVENT_TYPES as CustomerEventType[], example: 'message.delivered' }) event_type!: string;
  @ApiProperty({ example: 'we_01jd5x2m3n4p5q6r7s8t9v0w1x' }) endpoint_id!: string;
  @ApiProperty({ enum: DELIVERY_STATUSES, example: 'pending' }) status!: string;
  @ApiProperty({ type: [AttemptView] }) attempts!: AttemptView[];
  @ApiProperty({ type: 'string', nullable: true, ...at('2026-11-03T10:15:06.000Z') }) next_attempt_at!: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: 'HTTP 500' }) last_error!: string | null;
  @ApiProperty(at('2026-11-03T10:15:00.000Z')) created_at!: string;
  @ApiProperty(at('2026-11-03T10:15:01.000Z')) updated_at!: string;
}

/**
 * The resource an event is about, as the REST API returns it. Its schema (one of the payload
 * schemas of the customer event types) is filled in where the API description is assembled
 * (src/api-description.ts): this module does not know the other modules' resources.
 */
@ApiSchema({ name: 'EventData', description: 'The resource the event is about, as the REST API returns it' })
export class EventData {}

@ApiSchema({ name: 'Event' })
export class EventView {
  @ApiProperty({ example: 'evt_01jd5x2m3n4p5q6r7s8t9v0w1x', description: 'Also the webhook-id header of every delivery attempt' }) id!: string;
  @ApiProperty({ enum: ['event'] }) record_type!: 'event';
  @ApiProperty({ type: 'string', enum: CUSTOMER_EVENT_TYPES as CustomerEventType[], example: 'message.delivered' }) type!: string;
  @ApiProperty({ type: 'integer', example: 1 }) event_version!: number;
  @ApiProperty(at('2026-11-03T10:15:00.000Z')) created_at!: string;
  @ApiProperty({ type: () => EventData }) data!: object;
}

@ApiSchema({ name: 'EventWithDeliveries' })
export class EventWithDeliveriesView extends EventView {
  @ApiProperty({ type: [DeliveryView] }) deliveries!: DeliveryView[];
}
