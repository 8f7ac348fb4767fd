/**
 * npx tsx bench/profile/byinfo-profile.ts: a CPU profile of the service process while it answers
 * byinfo for a text about 300 guests of the event match (every match), 50 connections (issue 13,
 * goal 3), written to byinfo.cpuprofile (PROFILE_OUT to name another), with the self time per
 * area and the heaviest functions. BENCH_GUESTS guests (default 100,000), one in 333 matching.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createClient, startTestService } from '../../test/support/service.js';
import { load } from '../support.js';
import { heaviest, summarise } from './areas.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 100_000);
const service = await startTestService({ LOG_LEVEL: 'silent' });
const client = await createClient(service);
const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
const eventId = event.body.id as string;
const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
for (let start = 0; start < GUESTS; start += 200) {
  const batch = Array.from({ length: Math.min(200, GUESTS - start) }, (_, k) => {
    const i = start + k;
    return { firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `BC-${i}`, additionalInfo: i % 333 === 1 ? `Aisle seat, row ${i % 40}` : `Table ${i % 50}, vegan menu` };
  });
  const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, { method: 'PUT', headers, body: JSON.stringify(batch) });
  if (reply.status !== 204) throw new Error(await reply.text());
}
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
