import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags, ApiUnauthorizedResponse, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { AccountId, ApiKeyGuard } from '../accounts/api-key.guard.js';
import { MAX_PAGE_SIZE, pageOf, parsePage } from '../../platform/http/pagination.js';
import {
  CreateEndpointDto, DELIVERY_STATUSES, DeliveryListResponse, EndpointListResponse, EndpointResponse, EndpointWithSecretResponse, SecretResponse, UpdateEndpointDto,
} from './endpoint.dto.js';
import { EndpointsService } from './endpoints.service.js';
import { optionalEnum } from '../../platform/http/query-params.js';


@ApiTags('Webhook endpoints')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'Missing or invalid API key' })
@UseGuards(ApiKeyGuard)
@Controller('v2/webhook_endpoints')
export class EndpointsController {
  constructor(private readonly endpoints: EndpointsService) {}

  @Post()
  @ApiOperation({ summary: 'Create an endpoint', description: 'Returns the signing secret (whsec_…). Deliveries follow Standard Webhooks 1.0.' })
  @ApiCreatedResponse({ type: EndpointWithSecretResponse })
  @ApiUnprocessableEntityResponse({ description: 'Invalid URL (not http/https, credentials, private address) or unknown event type' })
  async create(@AccountId() accountId: string, @Body() dto: CreateEndpointDto) {
    return { data: await this.endpoints.create(accountId, dto) };
  }

  @Get()
  @ApiOperation({ summary: 'List endpoints, newest first' })
  @ApiQuery({ name: 'page[size]', required: false, example: 50, description: `1..${MAX_PAGE_SIZE}` })
  @ApiQuery({ name: 'page[after]', required: false, description: 'meta.next_cursor of the previous page' })
  @ApiOkResponse({ type: EndpointListResponse })
  async list(@AccountId() accountId: string, @Query() query: Record<string, unknown>) {
    const page = parsePage(query);
    return pageOf(await this.endpoints.list(accountId, page), page);
  }

  @Get(':id')
  @ApiOkResponse({ type: EndpointResponse })
  @ApiNotFoundResponse()
  async get(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.get(accountId, id) };
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change url, event_types or description' })
  @ApiOkResponse({ type: EndpointResponse })
  @ApiNotFoundResponse()
  async update(@AccountId() accountId: string, @Param('id') id: string, @Body() dto: UpdateEndpointDto) {
    return { data: await this.endpoints.update(accountId, id, dto) };
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete an endpoint', description: 'Deliveries still owed to it become failed.' })
  @ApiOkResponse({ type: EndpointResponse })
  @ApiNotFoundResponse()
  async remove(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.remove(accountId, id) };
  }

  @Post(':id/enable')
  @HttpCode(200)
  @ApiOperation({ summary: 'Re-enable a disabled endpoint', description: 'Parked deliveries resume with a fresh retry schedule.' })
  @ApiOkResponse({ type: EndpointResponse })
  @ApiNotFoundResponse()
  async enable(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.enable(accountId, id) };
  }

  @Post(':id/rotate_secret')
  @HttpCode(200)
  @ApiOperation({ summary: 'Rotate the signing secret', description: 'For 24 h every delivery carries both the old and the new signature.' })
  @ApiOkResponse({ type: SecretResponse })
  @ApiNotFoundResponse()
  async rotateSecret(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.rotateSecret(accountId, id) };
  }

  @Get(':id/secret')
  @ApiOkResponse({ type: SecretResponse })
  @ApiNotFoundResponse()
  async secret(@AccountId() accountId: string, @Param('id') id: string) {
    return { data: await this.endpoints.secret(accountId, id) };
  }

  @Get(':id/deliveries')
  @ApiOperation({ summary: "An endpoint's deliveries with every attempt, newest first" })
  @ApiQuery({ name: 'status', required: false, enum: DELIVERY_STATUSES })
  @ApiQuery({ name: 'page[size]', required: false, example: 50 })
  @ApiQuery({ name: 'page[after]', required: false })
  @ApiOkResponse({ type: DeliveryListResponse })
  @ApiNotFoundResponse()
  async deliveries(@AccountId() accountId: string, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const status = optionalEnum(query, 'status', DELIVERY_STATUSES);
    const page = parsePage(query);
    return pageOf(await this.endpoints.deliveries(accountId, id, status, page), page);
  }
}
