/**
 * The load generator, run as its own process so it does not share the service's event loop.
 * argv[2]: a JSON file { url, method?, headers?, connections, durationSec?, amount?, bodies? }
 * `bodies` rotate over requests (e.g. one barcode per scan). Prints autocannon's result as JSON.
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import { percentile, processCpuMicros, type LoadSpec } from './support.js';


const spec = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as LoadSpec;
let next = 0;
const options: autocannon.Options = {
  url: spec.url,
  method: (spec.method ?? 'GET') as autocannon.Request['method'],
  headers: spec.headers ?? {},
  connections: spec.connections,
  ...(spec.amount ? { amount: spec.amount } : { duration: spec.durationSec ?? 10 }),
  ...(spec.bodies
    ? {
        requests: [
          {
            setupRequest: (request) => ({ ...request, body: spec.bodies![next++ % spec.bodies!.length] }),
          },
        ],
      }
    : {}),
};
// Latency per answer kind: accepted (2xx) apart from refused (everything else, e.g. 503 overloaded).
// Each connection's first answer is kept apart: its time includes opening the connection, and
// with hundreds opened at once some wait seconds for that alone (measured here: the first
// requests of 500 connections answered up to 9 s after the start, every later one in < 1 s).
const accepted: number[] = [];
const refused: number[] = [];
const first: number[] = [];
const connected = new WeakSet<object>();
const result = await new Promise<autocannon.Result>((resolve, reject) => {
  const instance = autocannon(options, (error, done) => (error ? reject(error) : resolve(done)));
  instance.on('response', (client, statusCode, _bytes, responseTime) => {
    if (!connected.has(client)) {
      connected.add(client);
      first.push(responseTime);
      return;
    }
    (statusCode >= 200 && statusCode < 300 ? accepted : refused).push(responseTime);
  });
});
const summary = (values: number[]) => ({ count: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: values.reduce((most, v) => (v > most ? v : most), 0) });
process.stdout.write(
  JSON.stringify({
    requestsPerSec: result.requests.average,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    durationSec: result.duration,
    accepted: summary(accepted),
    refused: summary(refused),
    first: summary(first),
    cpuMicros: processCpuMicros(),
  }),
);
