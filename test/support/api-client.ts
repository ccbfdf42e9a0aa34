import { AccountsService } from '../../src/modules/accounts/accounts.service.js';
import type { TestApp } from './app.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A customer of the running test app: an account, its key, and JSON requests signed with it. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly accountId: string,
    readonly apiKey: string,
  ) {}

  static async forNewAccount(app: TestApp, name = 'Test account'): Promise<ApiClient> {
    const created = await app.app.get(AccountsService).createAccount(name);
    return new ApiClient(app.url, created.account.id, created.api_key);
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }

  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body ?? {}, headers);
  }
}
