/**
 * npx tsx bench/profile/scan-profile.ts [seconds]: a CPU profile of the service process during
 * check-in scans (50 connections), written to scan.cpuprofile, and the self time per area
 * (auth, validation, decide, append, projections, read-your-writes, serialisation, HTTP, GC).
 * Import happens before the profiler starts, so only the door is in the profile.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createClient, startTestService } from '../../test/support/service.js';
import { load } from '../support.js';
import { heaviest, summarise } from './areas.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const seconds = Number(process.argv[2] ?? 10);
const service = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL', OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0' });
const client = await createClient(service);
const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
const eventId = event.body.id as string;
const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
for (let start = 0; start < GUESTS; start += 200) {
  const batch = Array.from({ length: 200 }, (_, k) => ({ firstName: `F${start + k}`, lastName: 'L', barcode: `BC-${start + k}`, plusOnes: 1 }));
  const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, { method: 'PUT', headers, body: JSON.stringify(batch) });
  if (reply.status !== 204) throw new Error(await reply.text());
}
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 200 });
await session.post('Profiler.start');
const bodies = Array.from({ length: GUESTS }, (_, i) => JSON.stringify({ barcode: `BC-${i}`, gate: `G${i % 4}` }));
const result = await load({ url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`, method: 'POST', headers, connections: 50, durationSec: seconds, bodies });
const { profile } = await session.post('Profiler.stop');
fs.writeFileSync('scan.cpuprofile', JSON.stringify(profile));
console.log(`scans: ${Math.round(result.requestsPerSec)}/s, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}`);
console.log(summarise(profile));
console.log('\nheaviest functions (self time):');
console.log(heaviest(profile, 30));
await service.close();
process.exit(0);
