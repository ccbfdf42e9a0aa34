import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A real HTTP server on 127.0.0.1 standing in for the carriers' APIs: where it listens, the app's env pointing at it, its stop. */
export abstract class LocalCarrierServer {
  private server?: http.Server;
  url = '';

  protected async listen(handler: http.RequestListener): Promise<void> {
    this.server = http.createServer(handler);
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /** Environment pointing the app's carrier clients here. */
  env(): Record<string, string> {
    return { TELNYX_API_URL: `${this.url}/v2`, TWILIO_API_URL: `${this.url}/twilio`, VONAGE_API_URL: this.url };
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
