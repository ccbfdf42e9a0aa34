import { Body, Controller, Delete, Get, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { AccountId } from '../accounts/api-key.guard.js';
import { CustomerApi } from '../accounts/customer-api.js';
import { ApiOperationDoc, ApiPageQuery, DataOf, ListOf } from '../../platform/http/api-docs.js';
import { pageOf, parsePage } from '../../platform/http/pagination.js';
import { optionalEnum } from '../../platform/http/query-params.js';
import { CreateEndpointDto, DELIVERY_STATUSES, DeliveryView, EndpointView, EndpointWithSecretView, SecretView, UpdateEndpointDto } from './endpoint.dto.js';
import { EndpointsService } from './endpoints.service.js';

const BAD_URL: [422, string] = [422, 'Validation failed: the URL (not http/https, credentials, a private address) or an unknown event type'];

@CustomerApi('Webhook endpoints')
@Controller('v2/webhook_endpoints')
export class EndpointsController {
  constructor(private readonly endpoints: EndpointsService) {}

  @Post()
  @ApiOperationDoc({
    summary: 'Create an endpoint',
    description: 'Returns the signing secret (whsec_…). Deliveries follow Standard Webhooks 1.0: see the webhooks of this description for each payload.',
    status: 201,
    body: CreateEndpointDto,
    ok: DataOf(EndpointWithSecretView),
    errors: [BAD_URL],
  })
  async create(@AccountId() accountId: string, @Body() dto: CreateEndpointDto) {
    return { data: await this.endpoints.create(accountId, dto) };
  }

  @Get()
  @ApiOperationDoc({ summary: 'List endpoints, newest first', ok: ListOf(EndpointView), errors: [422] })
  @ApiPageQuery()
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.endpoints.list(accountId, page), page);
  }

  @Get(':id')
  @ApiOperationDoc({ summary: 'Get an endpoint', ok: DataOf(EndpointView), errors: [404] })
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.get(accountId, id) };
  }

  @Patch(':id')
  @ApiOperationDoc({ summary: 'Change url, event_types or description', body: UpdateEndpointDto, ok: DataOf(EndpointView), errors: [404, BAD_URL] })
  async update(@AccountId() accountId: string, @Param('id') id: string, @Body() dto: UpdateEndpointDto) {
    return { data: await this.endpoints.update(accountId, id, dto) };
  }

  @Delete(':id')
  @ApiOperationDoc({ summary: 'Delete an endpoint', description: 'Deliveries still owed to it become failed.', ok: DataOf(EndpointView), errors: [404] })
  async remove(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.remove(accountId, id) };
  }

  @Post(':id/enable')
  @ApiOperationDoc({ summary: 'Re-enable a disabled endpoint', description: 'Parked deliveries resume with a fresh retry schedule.', ok: DataOf(EndpointView), errors: [404] })
  async enable(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.enable(accountId, id) };
  }

  @Post(':id/rotate_secret')
  @ApiOperationDoc({ summary: 'Rotate the signing secret', description: 'For 24 h every delivery carries both the old and the new signature.', ok: DataOf(SecretView), errors: [404] })
  async rotateSecret(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.rotateSecret(accountId, id) };
  }

  @Get(':id/secret')
  @ApiOperationDoc({ summary: "Get an endpoint's signing secret", ok: DataOf(SecretView), errors: [404] })
  async secret(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.secret(accountId, id) };
  }

  @Get(':id/deliveries')
  @ApiOperationDoc({ summary: "An endpoint's deliveries with every attempt, newest first", ok: ListOf(DeliveryView), errors: [404, 422] })
  @ApiQuery({ name: 'status', required: false, enum: DELIVERY_STATUSES })
  @ApiPageQuery()
  async deliveries(@AccountId() accountId: string, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const status = optionalEnum(query, 'status', DELIVERY_STATUSES);
    const page = parsePage(query);
    return pageOf(await this.endpoints.deliveries(accountId, id, status, page), page);
  }
}
