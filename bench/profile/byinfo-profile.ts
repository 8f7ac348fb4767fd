/**
 * npx tsx bench/profile/byinfo-profile.ts: a CPU profile of the service process while it answers
 * byinfo for a text about 300 guests of the event match (every match), 50 connections (issue 13,
 * goal 3), written to byinfo.cpuprofile (PROFILE_OUT to name another), with the self time per
 * area and the heaviest functions. BENCH_GUESTS guests (default 100,000), one in 333 matching
 * (the event of `npm run bench -- byinfo`).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { load } from '../support.js';
import { byinfoEvent } from '../byinfo.js';
import { heaviest, summarise } from './areas.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 100_000);
const { service, eventId, headers } = await byinfoEvent(GUESTS);
const url = `${service.url}/checkin/v1/api/guests/${eventId}/byinfo?additionalInfo=${encodeURIComponent('aisle seat')}`;
await load({ url, headers, connections: 50, durationSec: 2 }); // warm-up, not profiled
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 500 });
await session.post('Profiler.start');
const result = await load({ url, headers, connections: 50, durationSec: 8 });
const { profile } = await session.post('Profiler.stop');
fs.writeFileSync(process.env.PROFILE_OUT ?? 'byinfo.cpuprofile', JSON.stringify(profile));
console.log(`byinfo: ${Math.round(result.requestsPerSec)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.non2xx} non-2xx`);
console.log(summarise(profile));
console.log('\nheaviest functions (self time):');
console.log(heaviest(profile, 25));
await service.close();
process.exit(0);
