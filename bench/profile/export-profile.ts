/**
 * npx tsx bench/profile/export-profile.ts: a CPU profile of the service process during a CSV
 * export of BENCH_GUESTS guests (default 20,000), written to export.cpuprofile, with the
 * heaviest functions.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { saveGuests } from '../../src/commands/guests.js';
import { createClient, startTestService } from '../../test/support/service.js';
import { heaviest } from './areas.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const type = process.argv[2] ?? 'CSV';
const service = await startTestService({ LOG_LEVEL: 'silent' });
const client = await createClient(service);
const event = await client.call('POST', '/checkin/v1/api/event', { title: 'S', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z', timeZoneId: 'Europe/Berlin' });
const eventId = event.body.id as string;
for (let start = 0; start < GUESTS; start += 200) {
  const batch = Array.from({ length: 200 }, (_, k) => ({ firstName: `F${start + k}`, lastName: `Müller ${k}`, email: `g${start + k}@example.com`, barcode: `BC-${start + k}`, additionalInfo: 'Vegan menu', validFrom: '2026-06-01T08:00:00Z', tags: 'vip' }));
  await saveGuests(service.services, { tenantId: client.id, actor: { type: 'client', id: client.id }, correlationId: `p-${start}`, now: new Date() }, eventId, batch, { mode: 'create' });
}
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 200 });
await session.post('Profiler.start');
const started = Date.now();
const reply = await client.call('POST', `/checkin/v1/api/event/export?type=${type}`, { id: eventId, title: 'S', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
const ms = Date.now() - started;
const { profile } = await session.post('Profiler.stop');
fs.writeFileSync('export.cpuprofile', JSON.stringify(profile));
console.log(`${type} export of ${reply.body.rowCount} guests: ${ms} ms`);
console.log(heaviest(profile, 30));
await service.close();
process.exit(0);
