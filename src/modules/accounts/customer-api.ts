import { applyDecorators, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponses } from '../../platform/http/api-docs.js';
import { ApiKeyGuard } from './api-key.guard.js';

/**
 * A controller of the customer REST API: bearer API key (ApiKeyGuard), and the statuses that guard
 * gives every route: 401 (no valid key), 429 (rate limit, Retry-After), 503 (database away).
 */
export function CustomerApi(tag: string): ClassDecorator {
  return applyDecorators(ApiTags(tag), ApiBearerAuth(), UseGuards(ApiKeyGuard), ApiErrorResponses(401, 429, 503));
}
