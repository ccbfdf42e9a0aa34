import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ContractRecorder } from './carrier-contract/contract-recorder.js';
import { VONAGE_ROOT } from './carrier-contract/operations.js';

/**
 * A real HTTP server on 127.0.0.1 standing in for the carriers' APIs: where it listens, the app's
 * env pointing at it, its stop. Every exchange it serves is checked against the carrier's published
 * document (docs/carrier-contract.md): `stop()` rejects, naming each divergence, when any request
 * the app sent (or any answer the fake gave) differs from it.
 */
export abstract class LocalCarrierServer {
  private server?: http.Server;
  url = '';
  readonly contract = new ContractRecorder(this.constructor.name);

  protected async listen(handler: http.RequestListener): Promise<void> {
    this.server = http.createServer((req, res) => {
      this.contract.observe(req, res);
      // Vonage's APIs sit under their own root here (env()); the handlers read Vonage's paths as Vonage publishes them.
      if (req.url?.startsWith(`${VONAGE_ROOT}/`)) req.url = req.url.slice(VONAGE_ROOT.length);
      handler(req, res);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /**
   * Environment pointing the app's carrier clients here. Vonage gets a root of its own: its
   * Reports API lives under `/v2` (`/v2/reports/records`) as Telnyx's whole API does, so a
   * request is told apart by the root it was sent to, never by guessing from the rest of its path.
   */
  env(): Record<string, string> {
    return { TELNYX_API_URL: `${this.url}/v2`, TWILIO_API_URL: `${this.url}/twilio`, VONAGE_API_URL: `${this.url}${VONAGE_ROOT}` };
  }

  /** Closes the server; then rejects with ContractDivergenceError if any exchange diverged from the carrier's document. */
  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.contract.expectNoDivergences();
  }
}
