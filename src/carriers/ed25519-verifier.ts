import { verify, type KeyObject } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/**
 * The worker's whole program. Kept as source text (run with `eval`) so the same code runs from
 * dist and under jest, which loads src: it needs nothing but node:crypto.
 * In: { id, bytes, ends } where bytes holds message₀ signature₀ message₁ signature₁ … and ends[i]
 * is where part i ends. Out: { id, valid } with one byte per pair (1 = genuine).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createPublicKey, verify } = require('node:crypto');
const key = createPublicKey({ key: Buffer.from(workerData.spki), format: 'der', type: 'spki' });
parentPort.on('message', ({ id, bytes, ends }) => {
  const all = Buffer.from(bytes);
  const valid = new Uint8Array(ends.length / 2);
  let start = 0;
  for (let i = 0; i < valid.length; i++) {
    const message = all.subarray(start, ends[2 * i]);
    const signature = all.subarray(ends[2 * i], ends[2 * i + 1]);
    start = ends[2 * i + 1];
    try { valid[i] = verify(null, message, key, signature) ? 1 : 0; } catch { valid[i] = 0; }
  }
  parentPort.postMessage({ id, valid }, [valid.buffer]);
});
`;

interface Pending {
  message: Buffer;
  signature: Buffer;
  resolve: (valid: boolean) => void;
}

interface Lane {
  worker: Worker;
  inFlight: Map<number, Pending[]>;
}

/** Never throws: malformed signatures are simply not genuine. */
function verifyHere(key: KeyObject, message: Buffer, signature: Buffer): boolean {
  try {
    return verify(null, message, key, signature);
  } catch {
    return false;
  }
}

/**
 * Ed25519 verification off the event loop. A verification costs about 60 µs of CPU here, close
 * to half of an ingest request's time on the main thread (see docs/benchmarks.md): the HTTP loop
 * hands them to worker threads, in one message per turn of the event loop, and goes on parsing
 * other requests meanwhile. With threads = 0 it verifies inline. A worker that dies has its
 * batch verified inline and is replaced, so no request waits forever on it.
 */
export class Ed25519Verifier {
  private readonly lanes: Lane[] = [];
  private queue: Pending[] = [];
  private scheduled = false;
  private nextBatchId = 0;
  private nextLane = 0;
  private closed = false;

  constructor(
    private readonly key: KeyObject,
    private readonly threads: number,
  ) {}

  verify(message: Buffer, signature: Buffer): Promise<boolean> {
    if (this.threads === 0 || this.closed) return Promise.resolve(verifyHere(this.key, message, signature));
    // Threads start at the first verification: processes that never ingest never start them.
    while (this.lanes.length < this.threads) this.lanes.push(this.startLane());
    return new Promise((resolve) => {
      this.queue.push({ message, signature, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.dispatch());
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const lanes = this.lanes.splice(0);
    for (const lane of lanes) this.verifyInline(lane.inFlight);
    await Promise.all(lanes.map((lane) => lane.worker.terminate()));
  }

  private dispatch(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return;
    if (this.closed || this.lanes.length === 0) return this.verifyInline(new Map([[0, batch]]));
    // One buffer for the whole batch, transferred rather than copied; a Buffer from the HTTP
    // layer is often a view of a larger pooled allocation that cloning would copy whole.
    const ends = new Uint32Array(batch.length * 2);
    let size = 0;
    batch.forEach((p, i) => {
      size += p.message.length;
      ends[2 * i] = size;
      size += p.signature.length;
      ends[2 * i + 1] = size;
    });
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const p of batch) {
      bytes.set(p.message, at);
      at += p.message.length;
      bytes.set(p.signature, at);
      at += p.signature.length;
    }
    const lane = this.lanes[this.nextLane++ % this.lanes.length];
    const id = this.nextBatchId++;
    // Referenced only while it owes answers: an idle verifier keeps no process alive.
    if (lane.inFlight.size === 0) lane.worker.ref();
    lane.inFlight.set(id, batch);
    lane.worker.postMessage({ id, bytes, ends }, [bytes.buffer, ends.buffer]);
  }

  private startLane(): Lane {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { spki: this.key.export({ format: 'der', type: 'spki' }) } });
    const lane: Lane = { worker, inFlight: new Map() };
    worker.on('message', ({ id, valid }: { id: number; valid: Uint8Array }) => {
      const batch = lane.inFlight.get(id);
      lane.inFlight.delete(id);
      if (lane.inFlight.size === 0) lane.worker.unref();
      batch?.forEach((p, i) => p.resolve(valid[i] === 1));
    });
    const replace = () => {
      const index = this.lanes.indexOf(lane);
      if (index < 0) return;
      this.verifyInline(lane.inFlight);
      this.lanes[index] = this.closed ? lane : this.startLane();
    };
    worker.on('error', replace);
    worker.on('exit', replace);
    // After the listeners, which ref it again.
    worker.unref();
    return lane;
  }

  private verifyInline(inFlight: Map<number, Pending[]>): void {
    for (const batch of inFlight.values()) for (const p of batch) p.resolve(verifyHere(this.key, p.message, p.signature));
    inFlight.clear();
  }
}
