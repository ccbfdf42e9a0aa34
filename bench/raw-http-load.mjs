// A load generator light enough to share two cores with the server it measures: keep-alive
// HTTP/1.1 over plain sockets, requests encoded to bytes before the clock starts, responses
// parsed only as far as status, Content-Length and body. node:http's client cost about a quarter
// of a core at 5k req/s here, CPU the server under test then could not use. Loopback only.
import net from 'node:net';

/** Encodes one POST as the exact bytes sent (Content-Length from the body's bytes). */
export function encodePost(url, headers, body) {
  const { host, pathname, search } = new URL(url);
  const bytes = Buffer.from(body);
  const lines = [`POST ${pathname}${search} HTTP/1.1`, `host: ${host}`, `content-length: ${bytes.length}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), bytes]);
}

/**
 * `connections` sockets, each sending its next request as soon as the previous response is in,
 * until `seconds` pass. `next()` gives the request bytes; `onResponse(status, body)` may return
 * false to count an error. Returns latencies (ms) of the successful ones and the error count.
 */
export async function rawClosedLoop({ url, connections, seconds, next, onResponse }) {
  const { hostname, port } = new URL(url);
  if (!['127.0.0.1', 'localhost', '::1'].includes(hostname)) throw new Error(`loopback only: ${hostname}`);
  const latencies = [];
  let errors = 0;
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: connections }, () => new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
    let buffered = Buffer.alloc(0);
    let started = 0;
    const send = () => {
      if (Date.now() >= deadline) return socket.end(resolve);
      started = performance.now();
      socket.write(next());
    };
    socket.on('connect', send);
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      const headEnd = buffered.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = buffered.subarray(0, headEnd).toString('latin1');
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (!length) return reject(new Error(`response without content-length: ${head}`));
      const end = headEnd + 4 + Number(length[1]);
      if (buffered.length < end) return;
      const status = Number(head.slice(9, 12));
      const body = buffered.subarray(headEnd + 4, end).toString();
      buffered = buffered.subarray(end);
      const elapsed = performance.now() - started;
      if (onResponse(status, body) === false) errors++;
      else latencies.push(elapsed);
      send();
    });
  })));
  return { latencies, errors, seconds };
}
