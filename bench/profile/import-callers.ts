/**
 * npx tsx bench/profile/import-callers.ts [guests] [callers...]: the import through PUT upsert in
 * batches of 200 with 1 and with 4 concurrent callers (issue 13 measured "4 callers × 200 guests"),
 * each beside the raw ceilings driven the same way, in one run, and the CPU seconds the process spent
 * during the service's import (process.cpuUsage: service and callers, all threads).
 */
import { createClient, startTestService } from '../../test/support/service.js';
import { rawEventSourcedImportServer, rawImportServer } from '../ceiling.js';
import { fmt } from '../support.js';

const GUESTS = Number(process.argv[2] ?? 20_000);
const CALLERS = process.argv.slice(3).map(Number);
const callerCounts = CALLERS.length ? CALLERS : [1, 4];

const batchOf = (tag: string, start: number) =>
  Array.from({ length: Math.min(200, GUESTS - start) }, (_, k) => {
    const i = start + k;
    return { firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `${tag}-${i}`, customId: `${tag}-crm-${i}`, plusOnes: i % 3, tags: i % 2 ? 'vip' : 'standard', additionalInfo: 'Table 12' };
  });

async function importInto(url: string, headers: Record<string, string>, tag: string, callers: number): Promise<number> {
  const started = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (;;) {
        const start = next;
        next += 200;
        if (start >= GUESTS) return;
        const reply = await fetch(url, { method: 'PUT', headers, body: JSON.stringify(batchOf(tag, start)) });
        if (reply.status !== 204) throw new Error(`${url}: ${reply.status} ${await reply.text()}`);
      }
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const service = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL' });
const client = await createClient(service);
const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
const plain = { 'content-type': 'application/json' };
for (const callers of callerCounts) {
  const event = await client.call('POST', '/checkin/v1/api/event', { title: `Import ${callers}`, startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
  const eventId = event.body.id as string;
  const cpuBefore = process.cpuUsage();
  const serviceS = await importInto(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, headers, `c${callers}`, callers);
  // CPU seconds of this process (service and callers, every thread) during the service's import: steadier than the wall time on a shared machine.
  const cpu = process.cpuUsage(cpuBefore);
  const serviceCpuS = (cpu.user + cpu.system) / 1e6;
  const raw = await rawImportServer('FULL');
  const rawS = await importInto(`${raw.url}/ceiling/${eventId}`, plain, `c${callers}`, callers);
  await raw.close();
  const rawEs = await rawEventSourcedImportServer('FULL', { plain: false });
  const rawEsS = await importInto(`${rawEs.url}/ceiling/${eventId}`, plain, `c${callers}`, callers);
  await rawEs.close();
  console.log(`${callers} caller(s): service ${fmt(serviceS, 2)} s (${fmt(GUESTS / serviceS)}/s), one-row ceiling ${fmt(rawS, 2)} s → ${(rawS / serviceS).toFixed(2)}, same-writes ceiling ${fmt(rawEsS, 2)} s → ${(rawEsS / serviceS).toFixed(2)}; service import CPU ${fmt(serviceCpuS, 2)} s`);
}
await service.close();
process.exit(0);
