import { AccountsService } from '../../src/modules/accounts/accounts.service.js';
import type { PhoneNumberView } from '../../src/modules/numbers/phone-number.dto.js';
import type { TestApp } from './app.js';
import { assignNumber, type Carrier } from './numbers.js';

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
    /** The in-process app, when there is one: assignNumber needs it. */
    private readonly app?: TestApp,
  ) {}

  static async forNewAccount(app: TestApp, name = 'Test account'): Promise<ApiClient> {
    const created = await app.app.get(AccountsService).createAccount(name);
    return new ApiClient(app.url, created.account.id, created.api_key, app);
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

  /**
   * Assigns this account a number as the operator's numbers:assign does (see support/numbers.ts),
   * then sets its voice settings through the API when given.
   */
  async assignNumber(phoneNumber: string, carrier: Carrier = 'telnyx', voice?: object): Promise<PhoneNumberView> {
    if (!this.app) throw new Error('ApiClient.assignNumber needs the in-process app: use ApiClient.forNewAccount(app), or assignNumberByCli for a cluster');
    const number = await assignNumber(this.app, this.accountId, phoneNumber, carrier);
    if (!voice) return number;
    const set = await this.request('PATCH', `/v2/phone_numbers/${number.id}`, { voice });
    if (set.status !== 200) throw new Error(`voice settings of ${phoneNumber} refused: ${set.status} ${JSON.stringify(set.body)}`);
    return set.body.data;
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }

  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body ?? {}, headers);
  }
}
