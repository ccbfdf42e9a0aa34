// CPU cost of one Ed25519 verification (node:crypto, OpenSSL) on this machine: the floor of what
// ingest spends per Telnyx webhook, whichever thread pays it.
//   node bench/ed25519.mjs [--n 20000] [--bytes 900]
import { generateKeyPairSync, sign, verify } from 'node:crypto';

const arg = (name, fallback) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || fallback;
const n = arg('n', 20000);
const bytes = arg('bytes', 900);
const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const message = Buffer.alloc(bytes, 'a');
const signature = sign(null, message, privateKey);

const time = (fn) => {
  for (let i = 0; i < 1000; i++) fn();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t0) / n / 1000;
};
const verifyUs = time(() => verify(null, message, publicKey, signature));
const signUs = time(() => sign(null, message, privateKey));
process.stdout.write(`${JSON.stringify({ message_bytes: bytes, runs: n, openssl: process.versions.openssl, verify_us: Number(verifyUs.toFixed(1)), sign_us: Number(signUs.toFixed(1)) })}\n`);
