/**
 * npx tsx bench/profile/import-alloc.ts: a sampling heap profile (what allocates) of the service
 * process while it imports guests through PUT /guests/{eventId}/upsert (batches of 200, one at a
 * time, as import-profile.ts does): bytes allocated per function (self), the largest first, and per
 * guest. Written to import.heapprofile (PROFILE_OUT to name another file).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { GUESTS, importService } from './import-run.js';
import { allocationPerOperation } from './areas.js';

const { service, importGuests } = await importService();
const session = new Session();
session.connect();
// Every object is sampled with the probability of its size over 8 kB on average: unbiased byte totals.
await session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
const seconds = await importGuests();
const { profile } = await session.post('HeapProfiler.stopSampling');
fs.writeFileSync(process.env.PROFILE_OUT ?? 'import.heapprofile', JSON.stringify(profile));
console.log(`import: ${GUESTS} guests in ${seconds.toFixed(1)} s`);
console.log(allocationPerOperation(profile, GUESTS, 'guest'));
await service.close();
process.exit(0);
