/**
 * npx tsx bench/profile/import-profile.ts: a CPU profile of the service process while it imports
 * guests through PUT /guests/{eventId}/upsert (batches of 200, one at a time), written to
 * import.cpuprofile (PROFILE_OUT to name another file), with the self time per area and the heaviest
 * functions. PII_ENCRYPTION=off profiles the import without sealing (the personal-data baseline).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { GUESTS, importService } from './import-run.js';
import { heaviest, summarise } from './areas.js';

const { service, importGuests } = await importService();
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 500 });
await session.post('Profiler.start');
const seconds = await importGuests();
const { profile } = await session.post('Profiler.stop');
fs.writeFileSync(process.env.PROFILE_OUT ?? 'import.cpuprofile', JSON.stringify(profile));
console.log(`import: ${GUESTS} guests in ${seconds.toFixed(1)} s`);
console.log(summarise(profile));
console.log('\nheaviest functions (self time):');
console.log(heaviest(profile, 25));
await service.close();
process.exit(0);
