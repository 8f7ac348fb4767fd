/**
 * npm run bench -- checkin, on the embedded default, in one run:
 *  1. import 100,000 guests through PUT /guests/{eventId}/upsert in batches of 200, beside the same
 *     batches into a raw express + better-sqlite3 handler (target ≥ 0.3 of that ceiling)
 *  2. check-in scans by barcode from 50 connections, beside a bare express route (target ≥ 0.4, p99 < 50 ms)
 *  3. byinfo on that event (target p99 < 30 ms)
 *  4. the import again as issue 13 measured it, 4 callers at once, into a service of its own, beside
 *     both ceilings driven by 4 callers too
 */
import { createClient, startTestService } from '../test/support/service.js';
import { bareRoute, rawEventSourcedImportServer, rawImportServer, ratio } from './ceiling.js';
import { fmt, load, record, table } from './support.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 100_000);
const infos = ['Needs wheelchair access', 'Vegan menu', 'Table 12', 'Press', 'Speaker — stage B', 'Allergic to nuts'];
/** One guest in 10,000 has this: the worst case for byinfo (every guest of the event is read). */
const rareInfo = 'Needs a sign-language interpreter';

export async function checkinBench(): Promise<void> {
  const service = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL' });
  const client = await createClient(service);
  const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
  const eventId = event.body.id as string;
  const headers = {
    authorization: `Bearer ${client.token}`,
    'ocp-apim-subscription-key': client.subscriptionKey,
    'content-type': 'application/json',
  };

  // 1. Import, one batch after another, as a CRM sync would; then the same batches into the raw ceiling.
  const batchOf = (start: number) =>
    Array.from({ length: Math.min(200, GUESTS - start) }, (_, k) => {
      const i = start + k;
      return {
        firstName: `First${i % 997}`,
        lastName: `Last${i % 1009}`,
        email: `guest${i}@example.com`,
        barcode: `BC-${i}`,
        customId: `crm-${i}`,
        plusOnes: i % 3,
        tags: i % 2 ? 'vip' : 'standard',
        additionalInfo: i % 10_000 === 4242 ? rareInfo : infos[i % infos.length],
      };
    });
  /** The batches sent by `callers` concurrent callers, each taking the next batch not yet sent (issue 13 measured 4). */
  const importInto = async (url: string, label: string, callers = 1, requestHeaders: Record<string, string> = headers) => {
    const started = process.hrtime.bigint();
    let next = 0;
    const caller = async () => {
      for (let start = next; start < GUESTS; start = next) {
        next += 200;
        const reply = await fetch(url, { method: 'PUT', headers: requestHeaders, body: JSON.stringify(batchOf(start)) });
        if (reply.status !== 204) throw new Error(`${label} upsert failed: ${reply.status} ${await reply.text()}`);
        if (start % 10_000 === 0) process.stdout.write(`  ${label}: ${fmt(start)} guests\r`);
      }
    };
    await Promise.all(Array.from({ length: callers }, caller));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(`  ${label}: ${fmt(GUESTS)} guests in ${fmt(seconds, 1)} s`);
    return seconds;
  };
  const importSeconds = await importInto(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, 'service import');
  const raw = await rawImportServer('FULL');
  const rawImportSeconds = await importInto(`${raw.url}/ceiling/${encodeURIComponent(eventId)}`, 'raw import (ceiling)');
  if (raw.rows() !== GUESTS) throw new Error(`raw import stored ${raw.rows()} rows, not ${GUESTS}`);
  await raw.close();
  const rawEsImport = async (plain: boolean, callers = 1) => {
    const rawEs = await rawEventSourcedImportServer('FULL', { plain });
    const seconds = await importInto(`${rawEs.url}/ceiling/${encodeURIComponent(eventId)}`, `raw event-sourced import (the service's writes${plain ? ', encryption off' : ''}${callers > 1 ? `, ${callers} callers` : ''})`, callers);
    if (rawEs.rows() !== GUESTS) throw new Error(`raw event-sourced import stored ${rawEs.rows()} documents, not ${GUESTS}`);
    await rawEs.close();
    return seconds;
  };
  const rawEsImportSeconds = await rawEsImport(false);
  const rawEsPlainSeconds = await rawEsImport(true);

  const bareResult = await bareRoute({ connections: 50, durationSec: 5 });

  // 2. Scans: every request a different guest's barcode.
  const bodies = Array.from({ length: GUESTS }, (_, i) => JSON.stringify({ barcode: `BC-${i}`, gate: `G${i % 4}`, device: `d${i % 10}` }));
  const scans = await load({
    url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`,
    method: 'POST',
    headers,
    connections: 50,
    durationSec: 10,
    bodies,
  });

  // 3. byinfo on the same event.
  const byinfo = await load({
    url: `${service.url}/checkin/v1/api/guests/${eventId}/byinfo?additionalInfo=wheelchair&limit=50`,
    headers,
    connections: 4,
    durationSec: 10,
  });
  const byinfoRare = await load({
    url: `${service.url}/checkin/v1/api/guests/${eventId}/byinfo?additionalInfo=${encodeURIComponent('sign-language')}&limit=50`,
    headers,
    connections: 4,
    durationSec: 10,
  });
  // 4. The import as issue 13 measured it: 4 callers of 200 guests each, into a service of its own
  //    (the scans above ran on the first one), beside both ceilings driven the same way.
  const service4 = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL' });
  const client4 = await createClient(service4);
  const event4 = await client4.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
  const headers4 = { authorization: `Bearer ${client4.token}`, 'ocp-apim-subscription-key': client4.subscriptionKey, 'content-type': 'application/json' };
  const import4Seconds = await importInto(`${service4.url}/checkin/v1/api/guests/${event4.body.id}/upsert`, 'service import, 4 callers', 4, headers4);
  await service4.close();
  const raw4 = await rawImportServer('FULL');
  const rawImport4Seconds = await importInto(`${raw4.url}/ceiling/${encodeURIComponent(eventId)}`, 'raw import (ceiling), 4 callers', 4);
  if (raw4.rows() !== GUESTS) throw new Error(`raw import stored ${raw4.rows()} rows, not ${GUESTS}`);
  await raw4.close();
  const rawEsImport4Seconds = await rawEsImport(false, 4);

  for (const r of [scans, byinfo, byinfoRare]) {
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`bench run had failures: ${JSON.stringify(r)}`);
  }
  const stats = await client.call('GET', `/checkin/v1/api/event/${eventId}/stats`);
  const output = table(
    ['measure', 'figure', 'target'],
    [
      [`import ${fmt(GUESTS)} guests (upsert, batches of 200, one at a time)`, `${fmt(importSeconds, 1)} s (${fmt(GUESTS / importSeconds)} guests/s), ${ratio(rawImportSeconds, importSeconds)}`, '≥ 0.3 of the ceiling'],
      ['raw express + better-sqlite3 import of the same batches (ceiling; synchronous=FULL, one transaction per batch)', `${fmt(rawImportSeconds, 1)} s (${fmt(GUESTS / rawImportSeconds)} guests/s)`, ''],
      [
        "raw express + better-sqlite3 doing the service's writes for the same batches (two events per guest with metadata and a data-key row, FULL; the guest document and a checkpoint, NORMAL; rows shaped as with encryption on, no cipher run; nothing else)",
        `${fmt(rawEsImportSeconds, 1)} s (${fmt(GUESTS / rawEsImportSeconds)} guests/s); the service's import is ${ratio(rawEsImportSeconds, importSeconds).replace(' of the ceiling', '')} of it`,
        '',
      ],
      [
        'the same writes shaped as with encryption off (fields in clear, the customId in the reservation stream name, no key row)',
        `${fmt(rawEsPlainSeconds, 1)} s (${fmt(GUESTS / rawEsPlainSeconds)} guests/s)`,
        '',
      ],
      [
        `import ${fmt(GUESTS)} guests as issue 13 measured it: 4 callers, batches of 200 (a service of its own)`,
        `${fmt(import4Seconds, 1)} s (${fmt(GUESTS / import4Seconds)} guests/s), ${ratio(rawImport4Seconds, import4Seconds)} (one row per guest, 4 callers: ${fmt(rawImport4Seconds, 1)} s); ${ratio(rawEsImport4Seconds, import4Seconds).replace(' of the ceiling', '')} of the service's writes with 4 callers (${fmt(rawEsImport4Seconds, 1)} s)`,
        '≥ 0.3 of the ceiling',
      ],
      ['check-in scans by barcode, 50 connections', `${fmt(scans.requestsPerSec)} scans/s, p50 ${scans.p50} ms, p99 ${scans.p99} ms, ${ratio(scans.requestsPerSec, bareResult.requestsPerSec)}`, '≥ 0.4 of the ceiling, p99 < 50 ms'],
      [`byinfo, a common text (1 in 6 of ${fmt(GUESTS)} match), 4 connections`, `${fmt(byinfo.requestsPerSec)} req/s, p50 ${byinfo.p50} ms, p99 ${byinfo.p99} ms`, 'p99 < 30 ms'],
      [`byinfo, a rare text (1 in 10,000 match: every guest is read), 4 connections`, `${fmt(byinfoRare.requestsPerSec)} req/s, p50 ${byinfoRare.p50} ms, p99 ${byinfoRare.p99} ms`, 'p99 < 30 ms'],
      ['bare express route (ceiling), 50 connections', `${fmt(bareResult.requestsPerSec)} req/s, p99 ${bareResult.p99} ms`, ''],
    ],
  );
  const note = [
    `Scans admitted during the run: ${fmt(stats.body.admitted)}. Embedded adapters, SQLITE_SYNCHRONOUS=FULL (the default).`,
    'The load generator (autocannon) runs in its own process on the same 2 cores.',
    'byinfo reads the guests of the event in name order through the {eventId, lastNameLower, firstNameLower} index and stops after a page, so a common text answers from the first few hundred guests; a rare text reads them all.',
  ].join(' ');
  console.log(`${output}\n\n${note}`);
  record('Check-in', `${output}\n\n${note}`);
  await service.close();
}
