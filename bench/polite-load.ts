/**
 * A load generator of well-behaved clients, run as its own process like bench/load.ts:
 * `connections` loops, each with its own kept-alive connection, send the next request as soon as
 * the previous answer arrived, except after a 503 with Retry-After, when that loop waits the
 * given seconds first (as a scanning app or an integration should). Prints the same JSON as
 * bench/load.ts: latency of accepted (2xx) and refused answers apart.
 * argv[2]: a JSON file { url, method?, headers?, connections, durationSec?, bodies? }.
 */
import fs from 'node:fs';
import http from 'node:http';
import { percentile, processCpuMicros, type LoadSpec } from './support.js';

const spec = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as LoadSpec;
const durationMs = (spec.durationSec ?? 10) * 1000;
// Every loop keeps its connection while it waits (the agent's default keeps only 256 idle
// sockets, and reconnecting under load would measure TCP's SYN retries, not the service).
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections, maxFreeSockets: spec.connections });
const accepted: number[] = [];
const refused: number[] = [];
let errors = 0;
let timeouts = 0;
let next = 0;
const started = performance.now();
const until = started + durationMs;

/** One request on a kept-alive connection of the agent; resolves with its status once the body is read. */
function send(body: string | undefined): Promise<{ status: number; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(spec.url, { agent, method: spec.method ?? 'GET', headers: spec.headers ?? {}, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ...(typeof res.headers['retry-after'] === 'string' ? { retryAfter: res.headers['retry-after'] } : {}) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

// Each loop's first answer is kept apart: its time includes opening the connection (see bench/load.ts).
const first: number[] = [];

async function client(): Promise<void> {
  let connected = false;
  while (performance.now() < until) {
    const body = spec.bodies ? spec.bodies[next++ % spec.bodies.length] : undefined;
    const sent = performance.now();
    try {
      const reply = await send(body);
      const ms = performance.now() - sent;
      const ok = reply.status >= 200 && reply.status < 300;
      (connected ? (ok ? accepted : refused) : first).push(ms);
      connected = true;
      if (ok) continue;
      const retryAfter = Number(reply.retryAfter ?? 0);
      if (reply.status === 503 && retryAfter > 0) await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
    } catch (error) {
      if ((error as Error).message === 'timeout') timeouts += 1;
      else errors += 1;
    }
  }
}

await Promise.all(Array.from({ length: spec.connections }, () => client()));
agent.destroy();
const seconds = (performance.now() - started) / 1000;
const all = [...accepted, ...refused, ...first];
const summary = (values: number[]) => ({ count: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: values.reduce((most, v) => (v > most ? v : most), 0) });
process.stdout.write(
  JSON.stringify({
    requestsPerSec: all.length / seconds,
    total: all.length,
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    errors,
    timeouts,
    non2xx: refused.length,
    durationSec: seconds,
    accepted: summary(accepted),
    refused: summary(refused),
    first: summary(first),
    cpuMicros: processCpuMicros(),
  }),
);
