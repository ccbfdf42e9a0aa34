// `npm start` (after `npm run build`, which does nothing when dist/ is current: scripts/build.mjs):
// makes sure PostgreSQL and Redis answer (starting project-local ones under .data/ when needed),
// applies migrations, runs every role as child processes, prints the URLs once /health/ready
// answers, and stops everything gracefully on SIGINT/SIGTERM (including the .data/ services this
// run started).
import './load-env.mjs'; // first: .env under the environment, as the app and the CLI read it
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureServices, ROOT, stopPostgresCluster } from './services.mjs';
import { loadConfig } from '../dist/lib/platform/config/app-config.js';
import { migrate } from '../dist/lib/platform/database/migrator.js';
import { telnyxDevKeyPair } from '../dist/lib/telephony/telnyx-dev-key.js';

const say = (line) => process.stderr.write(`[start] ${line}\n`);
const env = process.env;
const port = env.PORT || '3000';
const sandboxPort = env.SANDBOX_PORT || '3100';
// Development default: customer webhook endpoints on this machine (the demo's receiver, yours while
// developing) are allowed. Set WEBHOOK_ALLOWED_CIDRS yourself to change it.
if (!env.WEBHOOK_ALLOWED_CIDRS) env.WEBHOOK_ALLOWED_CIDRS = '127.0.0.0/8';
// The sandbox signs Telnyx webhooks with the key pair of SANDBOX_TELNYX_SEED; the app derives the
// same public key when TELNYX_PUBLIC_KEY is unset and TELNYX_API_URL is the (loopback) sandbox.
const sandboxTelnyxKey = telnyxDevKeyPair(env.SANDBOX_TELNYX_SEED || undefined).publicKey;
if (env.TELNYX_PUBLIC_KEY && env.TELNYX_PUBLIC_KEY !== sandboxTelnyxKey) {
  say('TELNYX_PUBLIC_KEY is set and is not the sandbox key: the app will refuse (401) the Telnyx webhooks the sandbox sends');
}
const READY_TIMEOUT_MS = 60_000;
/** After this long a graceful stop becomes a kill: inside the 10 s a process manager (docker, systemd) usually grants. */
const STOP_GRACE_MS = 8_000;

/**
 * One child per entry. The carrier sandbox arrives with its own issue: once main.ts accepts the
 * `sandbox` role, add it here (see the SANDBOX marker) and print its URL below.
 */
const ROLES = [
  'all', // api + worker + relay
  'sandbox', // the carrier sandbox on SANDBOX_PORT: where the app sends SMS unless TELNYX_API_URL / TWILIO_API_URL say otherwise
];

let services;
try {
  services = await ensureServices(env);
} catch (err) {
  say(err.message);
  process.exit(1);
}

/** Services this run started under .data/ are stopped when it stops; shared ones are left alone. */
function stopStartedServices() {
  if (services.redis === 'started') {
    try {
      const pid = Number(readFileSync(join(ROOT, '.data', 'redis', 'redis.pid'), 'utf8').trim());
      process.kill(pid, 'SIGTERM');
      say(`stopped the project-local Redis (pid ${pid})`);
    } catch (err) {
      say(`could not stop the project-local Redis: ${err.message}`);
    }
  }
  if (services.postgres === 'started') {
    stopPostgresCluster(join(ROOT, '.data', 'postgres'));
    say('stopped the project-local PostgreSQL');
  }
}

// What `onceline migrate` runs (the same function; the CLI's tests cover the command), in this
// process: booting the CLI for it cost 1.7 s and 2 s of CPU on every start.
function notStarting(...lines) {
  for (const line of lines) say(line);
  stopStartedServices();
  process.exit(1);
}
let config;
try {
  config = loadConfig(env);
} catch (err) {
  notStarting(err.message, 'not starting');
}
try {
  const { applied, alreadyApplied } = await migrate(config.DATABASE_URL);
  say(`applied ${applied.length} migration(s)${applied.length ? `: ${applied.join(', ')}` : ''}; ${alreadyApplied.length} already applied`);
} catch (err) {
  notStarting(err.message, 'migrations failed; not starting');
}

const children = new Map();
let stopping = false;
let exitCode = 0;

for (const role of ROLES) {
  // detached: a terminal Ctrl-C reaches only this process, which forwards one signal. The IPC
  // channel is the child's lifeline: when this process dies however it dies (even SIGKILL), the
  // channel closes and the child stops gracefully by itself (src/platform/lifecycle/graceful-stop.ts).
  const child = spawn(process.execPath, ['dist/main.js', role], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env, detached: true });
  children.set(role, child);
  child.on('exit', (code, signal) => {
    children.delete(role);
    if (!stopping) {
      say(`role ${role} exited (${signal ?? `code ${code}`}); stopping the others`);
      exitCode = code || 1;
      stop('SIGTERM');
    }
    if (children.size === 0) {
      stopStartedServices();
      say('stopped');
      process.exit(exitCode);
    }
  });
}

function stop(signal) {
  if (stopping) return; // npm and the terminal may both deliver the same Ctrl-C
  stopping = true;
  say(`stopping (${signal}): finishing in-flight work`);
  for (const child of children.values()) child.kill('SIGTERM');
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, STOP_GRACE_MS).unref();
}
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
// `npm start` runs this with `exec`, so npm's own signal forwarding reaches it; should the parent
// die without passing a signal on (SIGKILL, a shell that does not forward), this process is
// re-parented and stops too rather than running on unsupervised.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) stop('its parent went away');
}, 500).unref();

async function waitUntilReady() {
  const urls = [`http://127.0.0.1:${port}/health/ready`, `http://127.0.0.1:${sandboxPort}/sandbox/health`];
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline && !stopping) {
    try {
      const answers = await Promise.all(urls.map((url) => fetch(url, { signal: AbortSignal.timeout(2000) })));
      if (answers.every((res) => res.status === 200)) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

if (await waitUntilReady()) {
  const base = `http://127.0.0.1:${port}`;
  const lines = [
    '',
    'Onceline is running:',
    `  API         ${base}/v2`,
    `  Swagger UI  ${base}/docs   (OpenAPI JSON ${base}/docs-json)`,
    `  Health      ${base}/health/live   ${base}/health/ready`,
    `  Metrics     ${base}/metrics`,
    `  Sandbox     http://127.0.0.1:${sandboxPort}   carrier emulator (Telnyx POST /v2/messages, Twilio Messages.json, Vonage POST /v1/messages); the app sends SMS here`,
    `              counters GET /sandbox/stats; chaos now ${env.SANDBOX_CHAOS || 'off'}, change it with`,
    `              curl -X POST localhost:${sandboxPort}/sandbox/chaos -d '{"chaos":"duplicate=3,resign,contradict"}'`,
    `              inbound SMS: curl -X POST localhost:${sandboxPort}/sandbox/inbound -d '{"from":"+13125550001","to":"<your number>","text":"hi"}'`,
    `              Telnyx webhooks signed with the sandbox dev key ${sandboxTelnyxKey}`,
    `  Demo        npm run demo   (another terminal: account, numbers, webhook receiver, SMS under chaos, counts)`,
    `  Webhooks    WEBHOOK_ALLOWED_CIDRS=${env.WEBHOOK_ALLOWED_CIDRS} (endpoints on 127.0.0.0/8 allowed in dev)`,
    `  Admin CLI   node dist/cli.js --help   (e.g. node dist/cli.js accounts:create --name demo)`,
    `Ctrl-C, or SIGTERM / SIGINT to this process or to npm's (pid ${process.ppid}), stops it gracefully.`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} else if (!stopping) {
  say(`${`http://127.0.0.1:${port}/health/ready`} did not answer 200 within ${READY_TIMEOUT_MS / 1000} s; still running, see the logs above`);
}
