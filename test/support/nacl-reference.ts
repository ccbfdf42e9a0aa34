import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What tweetnacl, the reference implementation, makes of one key seed and message. */
export interface NaclReference {
  publicKey: Uint8Array;
  /** tweetnacl's detached signature of the message. */
  signature: Uint8Array;
  /** tweetnacl's verdict on that signature with `tamper` applied (a byte xor'd), or untouched. */
  verified: boolean;
}

// Plain CommonJS in the worker: tweetnacl loaded there, outside jest's vm context.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const nacl = require(workerData.naclPath);
parentPort.on('message', ({ id, seed, message, tamper }) => {
  const pair = nacl.sign.keyPair.fromSeed(seed);
  const signature = nacl.sign.detached(message, pair.secretKey);
  const checked = signature.slice();
  if (tamper) checked[tamper.at] ^= tamper.bits;
  parentPort.postMessage({ id, publicKey: pair.publicKey, signature, verified: nacl.sign.detached.verify(message, checked, pair.publicKey) });
});
`;

/**
 * tweetnacl on a worker thread. In a jest test file every global a module reads (tweetnacl's
 * `new Float64Array` thousands of times per signature) goes through the vm context's global:
 * the 60-run property test of test/carriers/carriers.test.ts took 32.5 s in a full `npm test`
 * and 54 s beside other work, against ~3 s with tweetnacl here, on its own thread, as plain Node.
 */
export class NaclReferenceWorker {
  private readonly worker = new Worker(WORKER, { eval: true, workerData: { naclPath: createRequire(import.meta.url).resolve('tweetnacl') } });
  private readonly waiting = new Map<number, { resolve: (answer: NaclReference) => void; reject: (err: Error) => void }>();
  private next = 0;
  private failed?: Error;

  constructor() {
    this.worker.on('message', ({ id, ...answer }: NaclReference & { id: number }) => {
      this.waiting.get(id)?.resolve(answer);
      this.waiting.delete(id);
    });
    // The worker failed (tweetnacl not loadable, say): every run waiting for it fails with its error.
    this.worker.on('error', (err) => {
      this.failed = err;
      for (const { reject } of this.waiting.values()) reject(err);
      this.waiting.clear();
    });
  }

  run(seed: Uint8Array, message: Uint8Array, tamper?: { at: number; bits: number }): Promise<NaclReference> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      if (this.failed) return reject(this.failed);
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ id, seed, message, tamper });
    });
  }

  close(): Promise<number> {
    return this.worker.terminate();
  }
}
