/**
 * The load generator, run as its own process so it does not share the service's event loop.
 * argv[2]: a JSON file { url, method?, headers?, connections, durationSec?, amount?, bodies? }
 * `bodies` rotate over requests (e.g. one barcode per scan). Prints autocannon's result as JSON.
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import type { LoadSpec } from './support.js';


const spec = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as LoadSpec;
let next = 0;
const result = await autocannon({
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
});
process.stdout.write(
  JSON.stringify({
    requestsPerSec: result.requests.average,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
  }),
);
