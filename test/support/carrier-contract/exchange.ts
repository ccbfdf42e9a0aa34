import type http from 'node:http';

/** A request as it reached a fake or the sandbox: what the checks read. */
export interface ObservedRequest {
  method: string;
  /** Path and query as sent, e.g. `/v2/phone_numbers?filter[phone_number]=…`. */
  url: string;
  headers: http.IncomingHttpHeaders | Record<string, string>;
  body: string;
}

/** The answer to it, as written on the wire (absent when the connection was cut first). */
export interface ObservedResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function header(headers: ObservedRequest['headers'], name: string): string | undefined {
  const value = (headers as Record<string, string | string[] | undefined>)[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** `application/json; charset=utf-8` → `application/json`. */
export function mediaType(value: string | undefined): string | undefined {
  return value?.split(';')[0].trim().toLowerCase() || undefined;
}
