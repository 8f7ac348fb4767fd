/**
 * npx tsx bench/profile/scan-alloc.ts [seconds]: a sampling heap profile (what allocates) of the
 * service process during check-in scans (50 connections), the door of scan-profile.ts: bytes
 * allocated per function (self), the largest first, and per scan. Written to scan.heapprofile.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { doorWithGuests } from './door.js';
import { load } from '../support.js';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

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
const bySite = new Map<string, number>();
let total = 0;
const walk = (node: HeapNode): void => {
  const frame = node.callFrame;
  const site = `${frame.functionName || '(anonymous)'} (${frame.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${frame.lineNumber + 1})`;
  bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
  total += node.selfSize;
  node.children.forEach(walk);
};
walk((profile as unknown as { head: HeapNode }).head);
console.log(`allocated: ${(total / 1e6).toFixed(0)} MB, ${((total / Math.max(scans, 1)) / 1024).toFixed(1)} kB per scan`);
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
  console.log(`${((bytes / Math.max(scans, 1)) / 1024).toFixed(2).padStart(8)} kB/scan  ${site}`);
}
await service.close();
process.exit(0);
