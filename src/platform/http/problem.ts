/** One entry of the contract's `errors[]` body. */
export interface ApiError {
  code: string;
  title: string;
  detail?: string;
  source?: { pointer?: string; header?: string };
  meta?: Record<string, unknown>;
}

const TITLES: Record<number, [code: string, title: string]> = {
  400: ['bad_request', 'Bad request'],
  401: ['unauthorized', 'Authentication failed'],
  403: ['forbidden', 'Forbidden'],
  404: ['not_found', 'Resource not found'],
  405: ['method_not_allowed', 'Method not allowed'],
  408: ['request_timeout', 'Request timeout'],
  409: ['conflict', 'Conflict'],
  413: ['payload_too_large', 'Request body too large'],
  414: ['uri_too_long', 'Request URI too long'],
  415: ['unsupported_media_type', 'Unsupported media type'],
  422: ['validation_failed', 'Validation failed'],
  429: ['rate_limited', 'Too many requests'],
  431: ['headers_too_large', 'Request headers too large'],
  503: ['service_unavailable', 'Service unavailable, retry later'],
};

export function defaultError(status: number): [code: string, title: string] {
  return TITLES[status] ?? (status >= 500 ? ['internal_error', 'Internal error'] : ['error', 'Request failed']);
}
