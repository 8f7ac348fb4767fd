/**
 * npx tsx bench/profile/scan-ratio.ts [seconds]: the check-in scan figure beside the bare express
 * route, measured bare / scans / bare back to back in one run, without the 100,000-guest import of
 * `npm run bench -- checkin` (a quick before/after check of one change on a shared machine).
 * Same load as the checkin suite: 50 connections, a different guest's barcode per scan,
 * SQLITE_SYNCHRONOUS=FULL. BENCH_ACCEPT_ENCODING (e.g. `gzip, deflate, br`, as phones' HTTP clients
 * send it) adds that header to every scan.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { doorWithGuests } from './door.js';
import { bareRoute } from '../ceiling.js';
import { load } from '../support.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const seconds = Number(process.argv[2] ?? 8);
const door = await doorWithGuests(GUESTS);
const { service, eventId, bodies } = door;
const acceptEncoding = process.env.BENCH_ACCEPT_ENCODING;
const headers = acceptEncoding ? { ...door.headers, 'accept-encoding': acceptEncoding } : door.headers;
const before = await bareRoute({ connections: 50, durationSec: 5 });
const elu = performance.eventLoopUtilization();
const cpu = process.cpuUsage();
const scans = await load({ url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`, method: 'POST', headers, connections: 50, durationSec: seconds, bodies });
const busy = performance.eventLoopUtilization(elu);
const used = process.cpuUsage(cpu);
const after = await bareRoute({ connections: 50, durationSec: 5 });
await service.close();
const bare = (before.requestsPerSec + after.requestsPerSec) / 2;
console.log(`bare route: ${Math.round(before.requestsPerSec)} then ${Math.round(after.requestsPerSec)} req/s`);
// autocannon's p99 counts each connection's first answer, which waits for its connection to open
// (50 of the run's answers, inside its slowest 1%); the second figure leaves them out.
console.log(
  `scans: ${Math.round(scans.requestsPerSec)}/s, p50 ${scans.p50} ms, p99 ${scans.p99} ms (${Math.round(scans.accepted.p99)} ms without each connection's first answer), non-2xx ${scans.non2xx}, errors ${scans.errors}`,
);
console.log(
  `per scan: main thread busy ${((busy.active / scans.total) * 1000).toFixed(0)} µs, process CPU ${((used.user + used.system) / scans.total).toFixed(0)} µs (all threads); event loop utilisation ${busy.utilization.toFixed(2)}`,
);
console.log(`ratio: ${(scans.requestsPerSec / bare).toFixed(2)} of the bare route`);
// What the machine allows at best: the service and the load generator share its cores, so even a
// service spread perfectly over every core serves at most cores / (its CPU + the generator's CPU
// per scan) scans a second.
const cores = os.availableParallelism();
const serviceCpu = (used.user + used.system) / scans.total;
const generatorCpu = scans.cpuMicros / scans.total;
const ceilingCpu = (before.cpuMicros + after.cpuMicros) / (before.total + after.total);
const atBest = (cores * 1e6) / (serviceCpu + generatorCpu);
console.log(
  `load generator: ${generatorCpu.toFixed(0)} µs CPU per scan, ${ceilingCpu.toFixed(0)} µs per bare request; ` +
    `${cores} cores fully used by service and generator: at most ${Math.round(atBest)} scans/s, ${(atBest / bare).toFixed(2)} of the bare route`,
);
process.exit(0);
