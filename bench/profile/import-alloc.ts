/**
 * npx tsx bench/profile/import-alloc.ts: a sampling heap profile (what allocates) of the service
 * process while it imports guests through PUT /guests/{eventId}/upsert (batches of 200, one at a
 * time, as import-profile.ts does): bytes allocated per function (self), the largest first, and per
 * guest. Written to import.heapprofile (PROFILE_OUT to name another file).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createClient, startTestService } from '../../test/support/service.js';
import { allocationPerOperation } from './areas.js';


const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const service = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL', OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0', PII_ENCRYPTION: process.env.PII_ENCRYPTION ?? 'on' });
const client = await createClient(service);
const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
const eventId = event.body.id as string;
const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
const session = new Session();
session.connect();
// Every object is sampled with the probability of its size over 8 kB on average: unbiased byte totals.
await session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
const started = process.hrtime.bigint();
for (let start = 0; start < GUESTS; start += 200) {
  const batch = Array.from({ length: 200 }, (_, k) => {
    const i = start + k;
    return { firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `BC-${i}`, customId: `crm-${i}`, plusOnes: i % 3, tags: 'vip', additionalInfo: 'Vegan menu' };
  });
  const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, { method: 'PUT', headers, body: JSON.stringify(batch) });
  if (reply.status !== 204) throw new Error(await reply.text());
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const { profile } = await session.post('HeapProfiler.stopSampling');
fs.writeFileSync(process.env.PROFILE_OUT ?? 'import.heapprofile', JSON.stringify(profile));
console.log(`import: ${GUESTS} guests in ${seconds.toFixed(1)} s`);
console.log(allocationPerOperation(profile, GUESTS, 'guest'));
await service.close();
process.exit(0);
