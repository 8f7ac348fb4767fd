/**
 * npx tsx bench/profile/scan-alloc.ts [seconds]: a sampling heap profile (what allocates) of the
 * service process during check-in scans (50 connections), the door of scan-profile.ts: bytes
 * allocated per function (self), the largest first, and per scan. Written to scan.heapprofile.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { doorWithGuests } from './door.js';
import { load } from '../support.js';
import { allocationPerOperation } from './areas.js';


const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const seconds = Number(process.argv[2] ?? 10);
const { service, eventId, headers, bodies } = await doorWithGuests(GUESTS);
const session = new Session();
session.connect();
// Every object is sampled with the probability of its size over 8 kB on average: unbiased byte totals.
await session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
const result = await load({ url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`, method: 'POST', headers, connections: 50, durationSec: seconds, bodies });
const { profile } = await session.post('HeapProfiler.stopSampling');
fs.writeFileSync(process.env.PROFILE_OUT ?? 'scan.heapprofile', JSON.stringify(profile));
const scans = Math.round(result.requestsPerSec * seconds);
console.log(`scans: ${Math.round(result.requestsPerSec)}/s (${scans} in ${seconds} s), p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}`);
console.log(allocationPerOperation(profile, scans, 'scan'));
await service.close();
process.exit(0);
