// A load generator light enough to share two cores with the server it measures: keep-alive
// HTTP/1.1 over plain sockets, requests encoded to bytes before the clock starts, responses
// parsed only as far as status, Content-Length and body. node:http's client cost about a quarter
// of a core at 5k req/s here, CPU the server under test then could not use. Loopback only.
import net from 'node:net';

/**
 * One HTTP/1.1 message (request or response) with a Content-Length body from the front of
 * `buffered`: { head, status (responses), body, rest }, undefined while incomplete, null when
 * the head has no Content-Length (never sent by the app, nor by these clients).
 */
function takeMessage(buffered) {
  const headEnd = buffered.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const head = buffered.subarray(0, headEnd).toString('latin1');
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (!length) return head.startsWith('HTTP/') || /^(POST|PUT|PATCH) /.test(head) ? null : { head, status: 0, body: '', rest: buffered.subarray(headEnd + 4) };
  const end = headEnd + 4 + Number(length[1]);
  if (buffered.length < end) return undefined;
  return { head, status: Number(head.slice(9, 12)), body: buffered.subarray(headEnd + 4, end).toString(), rest: buffered.subarray(end) };
}

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
      const message = takeMessage(buffered);
      if (message === undefined) return;
      if (message === null) return reject(new Error(`response without content-length: ${buffered.subarray(0, 200).toString('latin1')}`));
      buffered = message.rest;
      const elapsed = performance.now() - started;
      if (onResponse(message.status, message.body) === false) errors++;
      else latencies.push(elapsed);
      send();
    });
  })));
  return { latencies, errors, seconds };
}

/**
 * Open-loop sending over keep-alive sockets, one request at a time on each: send(bytes) takes an
 * idle socket, or opens one (up to `maxSockets`), or waits for one; resolves the response status,
 * 0 for a connection that failed. Loopback only.
 */
export function rawSender(url, { maxSockets = 256 } = {}) {
  const { hostname, port } = new URL(url);
  if (!['127.0.0.1', 'localhost', '::1'].includes(hostname)) throw new Error(`loopback only: ${hostname}`);
  const idle = [];
  const waiting = [];
  const sockets = new Set();
  const dispatch = (socket, request) => {
    socket.current = request;
    socket.write(request.bytes);
  };
  const free = (socket) => {
    const next = waiting.shift();
    if (next) dispatch(socket, next);
    else idle.push(socket);
  };
  const connect = () => {
    const socket = net.connect({ host: hostname, port: Number(port), noDelay: true });
    sockets.add(socket);
    let buffered = Buffer.alloc(0);
    socket.on('connect', () => {
      socket.connected = true;
      free(socket);
    });
    socket.on('data', (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      const message = takeMessage(buffered);
      if (!message) return;
      buffered = message.rest;
      const { resolve } = socket.current;
      socket.current = undefined;
      resolve(message.status);
      free(socket);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      sockets.delete(socket);
      const at = idle.indexOf(socket);
      if (at >= 0) idle.splice(at, 1);
      socket.current?.resolve(0);
      // A socket that never connected means the app is not listening: fail what waits rather
      // than reconnect in a loop; a keep-alive socket the app closed is replaced.
      if (!socket.connected) for (const request of waiting.splice(0)) request.resolve(0);
      else if (waiting.length > 0) connect();
    });
  };
  return {
    send: (bytes) => new Promise((resolve) => {
      const request = { bytes, resolve };
      const socket = idle.pop();
      if (socket) return dispatch(socket, request);
      waiting.push(request);
      if (sockets.size < maxSockets) connect();
    }),
    close: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
}

const NO_CONTENT = 'HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n';

/**
 * A customer endpoint as light as the load: keep-alive HTTP/1.1, requests with Content-Length,
 * each answered 204 after `onRequest(head, body)` (head: the request line and headers as text).
 * Returns a net.Server to listen() on 127.0.0.1.
 */
export function rawReceiver(onRequest, { answerAfterMs = 0 } = {}) {
  return net.createServer((socket) => {
    socket.setNoDelay(true);
    let buffered = Buffer.alloc(0);
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      let answers = '';
      for (let message = takeMessage(buffered); message; message = takeMessage(buffered)) {
        buffered = message.rest;
        onRequest(message.head, message.body);
        answers += NO_CONTENT;
      }
      if (!answers) return;
      // A slow customer endpoint: every answer goes out answerAfterMs after its request (in order).
      if (answerAfterMs > 0) setTimeout(() => socket.writable && socket.write(answers), answerAfterMs);
      else socket.write(answers);
    });
  });
}

/** A header's value from a head given by rawReceiver (names are case-insensitive). */
export function headerOf(head, name) {
  return new RegExp(`\\r\\n${name}: *([^\\r]*)`, 'i').exec(head)?.[1];
}
