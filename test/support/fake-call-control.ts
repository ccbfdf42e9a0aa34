import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ContractRecorder } from './carrier-contract/contract-recorder.js';

/** One command our app sent to the fake Telnyx Call Control API. */
export interface ReceivedCommand {
  /** `dial`, or the action name (`answer`, `bridge`, `hangup`, `record_start`, `transcription_start`). */
  action: string;
  /** The leg acted on (actions), or the leg the dial created. */
  controlId: string;
  body: Record<string, any>;
  /** For dials: our client_state, decoded. */
  clientState?: { call_id: string; target: number; attempt: number };
}

export type CommandAnswer = { status: number; body?: unknown; headers?: Record<string, string> };

/**
 * A real local HTTP server standing in for Telnyx Call Control: records every command and answers
 * 200 like Telnyx (a dial gets a new call_control_id, the same for the same command_id), or a
 * scripted answer for the next commands of an action. It sends no webhooks: tests play Telnyx.
 * Every exchange is checked against Telnyx's published document: `stop()` rejects on a divergence.
 */
export class FakeCallControl {
  readonly commands: ReceivedCommand[] = [];
  private readonly scripts = new Map<string, CommandAnswer[]>();
  private readonly legsByCommand = new Map<string, string>();
  private readonly listeners: ((command: ReceivedCommand) => void)[] = [];
  private readonly holds = new Map<string, number>();
  private held: (() => void)[] = [];
  private server?: http.Server;
  url = '';
  readonly contract = new ContractRecorder('FakeCallControl');
  /** The session every dialed leg joins (Telnyx: link_to puts it in the caller's session). */
  sessionFor: (linkTo: string | undefined) => string = () => randomUUID();

  /** The next commands of `action` get these answers, in order. */
  answerNext(action: string, ...answers: CommandAnswer[]): void {
    this.scripts.set(action, [...(this.scripts.get(action) ?? []), ...answers]);
  }

  /** The answers to the next `count` commands of `action` wait until releaseHeld() (the carrier slow to answer). */
  holdNext(action: string, count = 1): void {
    this.holds.set(action, (this.holds.get(action) ?? 0) + count);
  }

  releaseHeld(): void {
    const held = this.held;
    this.held = [];
    for (const answer of held) answer();
  }

  of(action: string, filter: (c: ReceivedCommand) => boolean = () => true): ReceivedCommand[] {
    return this.commands.filter((c) => c.action === action && filter(c));
  }

  dials(callId?: string): ReceivedCommand[] {
    return this.of('dial', (c) => callId === undefined || c.clientState?.call_id === callId);
  }

  /** Distinct command ids of an action (the carrier does a command id once). */
  distinct(action: string, filter?: (c: ReceivedCommand) => boolean): ReceivedCommand[] {
    const seen = new Set<string>();
    return this.of(action, filter).filter((c) => !seen.has(c.body.command_id) && seen.add(c.body.command_id));
  }

  /** Resolves with the `n`th (1-based) command matching, once it has arrived. */
  async next(match: (c: ReceivedCommand) => boolean, n = 1, timeoutMs = 15000): Promise<ReceivedCommand> {
    const found = () => this.commands.filter(match)[n - 1];
    if (found()) return found();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no command #${n} matching after ${timeoutMs} ms; got ${JSON.stringify(this.commands.map((c) => c.action))}`)), timeoutMs);
      this.listeners.push(() => {
        const hit = found();
        if (hit) {
          clearTimeout(timer);
          resolve(hit);
        }
      });
    });
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      this.contract.observe(req, res);
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = raw ? JSON.parse(raw) : {};
        const path = req.url ?? '';
        const action = /^\/v2\/calls\/([^/]+)\/actions\/([a-z_]+)$/.exec(path);
        const name = action ? action[2] : path === '/v2/calls' ? 'dial' : 'unknown';
        const scripted = this.scripts.get(name)?.shift();
        let controlId = action ? decodeURIComponent(action[1]) : '';
        if (name === 'dial') {
          controlId = this.legsByCommand.get(body.command_id) ?? `v3:leg-${randomUUID()}`;
          this.legsByCommand.set(body.command_id, controlId);
        }
        const clientState = name === 'dial' ? JSON.parse(Buffer.from(body.client_state, 'base64').toString()) : undefined;
        const command = { action: name, controlId, body, ...(clientState && { clientState }) };
        this.commands.push(command);
        for (const listener of this.listeners) listener(command);
        const status = scripted?.status ?? 200;
        const ok = name === 'dial'
          ? { data: { call_control_id: controlId, call_leg_id: randomUUID(), call_session_id: this.sessionFor(body.link_to), record_type: 'call', is_alive: true } }
          : { data: { result: 'ok' } };
        const answer = () => {
          res.writeHead(status, { 'content-type': 'application/json', ...scripted?.headers });
          res.end(JSON.stringify(scripted?.body ?? (status < 300 ? ok : { errors: [{ code: String(status), title: 'scripted', detail: 'scripted answer' }] })));
        };
        const holds = this.holds.get(name) ?? 0;
        if (holds > 0) {
          this.holds.set(name, holds - 1);
          this.held.push(answer);
        } else answer();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    return this;
  }

  env(): Record<string, string> {
    return { TELNYX_API_URL: `${this.url}/v2` };
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.contract.expectNoDivergences();
  }
}
