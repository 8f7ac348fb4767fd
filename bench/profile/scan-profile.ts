/**
 * npx tsx bench/profile/scan-profile.ts [seconds]: a CPU profile of the service process during
 * check-in scans (50 connections), written to scan.cpuprofile, and the self time per area
 * (auth, validation, decide, append, projections, read-your-writes, serialisation, HTTP, GC).
 * Import happens before the profiler starts, so only the door is in the profile.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { doorWithGuests } from './door.js';
import { load } from '../support.js';
import { heaviest, summarise } from './areas.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const seconds = Number(process.argv[2] ?? 10);
const { service, eventId, headers } = await doorWithGuests(GUESTS);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 200 });
await session.post('Profiler.start');
const bodies = Array.from({ length: GUESTS }, (_, i) => JSON.stringify({ barcode: `BC-${i}`, gate: `G${i % 4}` }));
const result = await load({ url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`, method: 'POST', headers, connections: 50, durationSec: seconds, bodies });
const { profile } = await session.post('Profiler.stop');
fs.writeFileSync(process.env.PROFILE_OUT ?? 'scan.cpuprofile', JSON.stringify(profile));
console.log(`scans: ${Math.round(result.requestsPerSec)}/s, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}`);
console.log(summarise(profile));
console.log('\nheaviest functions (self time):');
console.log(heaviest(profile, 30));
await service.close();
process.exit(0);
