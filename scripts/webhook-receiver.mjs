// A customer's webhook endpoint for trying Onceline out: `node scripts/webhook-receiver.mjs PORT
// SECRET` listens on 127.0.0.1:PORT, verifies every delivery with the endpoint's signing secret
// (the `standardwebhooks` package, Standard Webhooks headers) and prints one line per delivery:
// `verified <type> <webhook-id>`, or `REFUSED (...)` and a 400 when the signature does not verify.
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

const [port, secret] = process.argv.slice(2);
if (!port || !secret?.startsWith('whsec_')) {
  process.stderr.write('usage: node scripts/webhook-receiver.mjs PORT whsec_...\n');
  process.exit(2);
}
const webhook = new Webhook(secret);
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    try {
      const event = webhook.verify(body, req.headers);
      process.stdout.write(`verified ${event.type} ${req.headers['webhook-id']} ${JSON.stringify(event.data).slice(0, 120)}\n`);
      res.writeHead(200).end('ok');
    } catch (err) {
      process.stdout.write(`REFUSED (${err.message}) ${req.headers['webhook-id'] ?? ''}\n`);
      res.writeHead(400).end();
    }
  });
});
server.listen(Number(port), '127.0.0.1', () => process.stderr.write(`webhook receiver on http://127.0.0.1:${port}/hooks\n`));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.close(() => process.exit(0)));
