/**
 * npm run bench -- export, on the embedded default:
 *  100,000 guests in one event (inserted through the command layer, batches of 200), then
 *  POST /checkin/v1/api/event/export as CSV and as Excel, each the best of three runs: wall time of the request and peak RSS
 *  growth while it runs (sampled every 50 ms from a worker thread, minus the RSS just before).
 *  Targets (issue 13, goal 4, on the reference machine): CSV < 3 s and ≥ 0.5 of the same-run
 *  ceiling (the same guests' column values, already in memory, through csv-stringify to a file);
 *  Excel < 3 s, shown beside its own ceiling (the same values through the export's xlsx writer,
 *  nothing else) and exceljs's streaming writer (the library it used before); RSS growth < 150 MB each.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { saveGuests, type GuestInput } from '../src/commands/guests.js';
import { guestColumns } from '../src/exports/columns.js';
import { writeExcelInProcess } from '../src/exports/excel.js';
import type { GuestDoc } from '../src/projections/guests.js';
import { rawCsv, rawExcel, rawExceljs, ratio } from './ceiling.js';
import { createClient, startTestService } from '../test/support/service.js';
import { load, fmt, record, table, tempDir } from './support.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 100_000);
/** Each export and each ceiling is timed this many times; the best time counts. */
const RUNS = 3;

/** The least seconds `work` took in RUNS runs. */
async function best(work: () => Promise<unknown>): Promise<number> {
  let seconds = Infinity;
  for (let run = 0; run < RUNS; run++) {
    const started = process.hrtime.bigint();
    await work();
    seconds = Math.min(seconds, Number(process.hrtime.bigint() - started) / 1e9);
  }
  return seconds;
}
const firstNames = ['Zoë', 'Åsa', 'José', 'Anne-Marie', 'Li', 'Ólafur', 'Chloé', 'Mark'];
const lastNames = ['Müller', "O'Brien", 'García Lorca', 'Smith, Jr.', 'Nguyễn', 'Dvořák', 'Øster', 'Jones'];

/** Samples the process RSS every 50 ms on its own thread, so a busy event loop cannot hide a peak. */
function rssSampler(): { stop(): Promise<number> } {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
     let peak = process.memoryUsage.rss();
     const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, 50);
     parentPort.on('message', () => { clearInterval(timer); peak = Math.max(peak, process.memoryUsage.rss()); parentPort.postMessage(peak); });`,
    { eval: true },
  );
  return {
    stop: () =>
      new Promise<number>((resolve) => {
        worker.once('message', (peak: number) => void worker.terminate().then(() => resolve(peak)));
        worker.postMessage('stop');
      }),
  };
}

export async function exportBench(): Promise<void> {
  const service = await startTestService({ LOG_LEVEL: 'silent' });
  const client = await createClient(service);
  const event = await client.call('POST', '/checkin/v1/api/event', {
    title: 'Stadium',
    startTime: '2026-01-01T10:00:00Z',
    endTime: '2027-12-01T12:00:00Z',
    timeZoneId: 'Europe/Berlin',
  });
  const eventId = event.body.id as string;

  const importStart = process.hrtime.bigint();
  for (let start = 0; start < GUESTS; start += 200) {
    const batch: GuestInput[] = Array.from({ length: Math.min(200, GUESTS - start) }, (_, k) => {
      const i = start + k;
      return {
        firstName: firstNames[i % firstNames.length],
        lastName: `${lastNames[i % lastNames.length]} ${i % 1009}`,
        email: `guest${i}@example.com`,
        barcode: `BC-${i}`,
        plusOnes: i % 3,
        isGroup: i % 5 === 0,
        additionalInfo: i % 10 === 0 ? '=needs "wheelchair", table 12\nstage B' : 'Vegan menu',
        validFrom: '2026-06-01T08:00:00Z',
        validTo: '2026-12-01T23:00:00Z',
        tags: i % 2 ? 'vip' : 'standard',
      };
    });
    const context = { tenantId: client.id, actor: { type: 'client' as const, id: client.id }, correlationId: `bench-${start}`, now: new Date() };
    await saveGuests(service.services, context, eventId, batch, { mode: 'create' });
    if (start % 10_000 === 0) process.stdout.write(`  inserted ${fmt(start)} guests\r`);
  }
  const importSeconds = Number(process.hrtime.bigint() - importStart) / 1e9;
  console.log(`  inserted ${fmt(GUESTS)} guests in ${fmt(importSeconds, 1)} s`);

  const body = { id: eventId, title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' };
  const rows: string[][] = [];
  let csvSeconds = NaN;
  let excelSeconds = NaN;
  for (const [type, secondsTarget] of [['CSV', 3], ['EXCEL', 3]] as const) {
    // Best of RUNS (the machine is shared: one run's figure can be doubled by other work); the
    // ceilings below are taken the same way. Peak RSS growth is the largest of the runs.
    let seconds = Infinity;
    let growthMb = 0;
    let sizeMb = 0;
    for (let run = 0; run < RUNS; run++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const before = process.memoryUsage.rss();
      const sampler = rssSampler();
      const started = process.hrtime.bigint();
      const reply = await client.call('POST', `/checkin/v1/api/event/export?type=${type}`, body);
      const taken = Number(process.hrtime.bigint() - started) / 1e9;
      growthMb = Math.max(growthMb, ((await sampler.stop()) - before) / 2 ** 20);
      if (reply.status !== 200 || reply.body.rowCount !== GUESTS) throw new Error(`export failed: ${reply.status} ${JSON.stringify(reply.body)}`);
      sizeMb = reply.body.sizeBytes / 2 ** 20;
      console.log(`  ${type} run ${run + 1}: ${fmt(taken, 2)} s`);
      seconds = Math.min(seconds, taken);
    }
    if (type === 'CSV') csvSeconds = seconds;
    else excelSeconds = seconds;
    console.log(`  ${type}: best ${fmt(seconds, 2)} s, RSS +${fmt(growthMb)} MB, ${fmt(sizeMb, 1)} MB file`);
    rows.push([
      `${type === 'CSV' ? 'CSV' : 'Excel'} export of ${fmt(GUESTS)} guests (${fmt(sizeMb, 1)} MB file)`,
      `${fmt(seconds, 2)} s, peak RSS growth ${fmt(growthMb)} MB`,
      `< ${secondsTarget} s, < 150 MB`,
    ]);
  }
  // The same workbook written on the main thread (no pool thread), from the store: what the thread's hand-off costs.
  const inProcessDir = tempDir('bench-excel-main-');
  const inProcessSeconds = await best(async () => {
    await writeExcelInProcess(
      service.services.readStore.collection<GuestDoc>('guests').stream({ clientId: client.id, eventId }, { sort: { lastNameLower: 1, firstNameLower: 1 }, readOnly: true }),
      path.join(inProcessDir, 'guests.xlsx'),
      { timeZone: 'Europe/Berlin', summary: (count) => [['Guests in this file', count]] },
    );
  });
  fs.rmSync(inProcessDir, { recursive: true, force: true });
  rows.push([`the same Excel written on the main thread, store to file (no pool thread, no HTTP)`, `${fmt(inProcessSeconds, 2)} s`, '']);

  // The door during an Excel export (goal 6: the workbook is written on a pool thread):
  // check-in scans for 6 s alone (after a 3 s warm-up), then for 6 s while an Excel export of every guest runs.
  const scanHeaders = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
  const scanBodies = (offset: number) => Array.from({ length: 5_000 }, (_, i) => JSON.stringify({ barcode: `BC-${offset + i}`, gate: `G${i % 4}` }));
  const scanUrl = `${service.url}/checkin/v1/api/guests/${eventId}/checkin`;
  await load({ url: scanUrl, method: 'POST', headers: scanHeaders, connections: 20, durationSec: 3, bodies: scanBodies(80_000) }); // warm-up
  const alone = await load({ url: scanUrl, method: 'POST', headers: scanHeaders, connections: 20, durationSec: 6, bodies: scanBodies(0) });
  const exporting = client.call('POST', '/checkin/v1/api/event/export?type=EXCEL', body);
  const during = await load({ url: scanUrl, method: 'POST', headers: scanHeaders, connections: 20, durationSec: 6, bodies: scanBodies(50_000) });
  if ((await exporting).status !== 200) throw new Error('the Excel export during scans failed');
  rows.push([`check-in scans, 20 connections, 6 s, alone`, `${fmt(alone.requestsPerSec)} scans/s, p50 ${alone.p50} ms, p99 ${alone.p99} ms`, '']);
  rows.push([`the same scans while an Excel export of the ${fmt(GUESTS)} guests runs`, `${fmt(during.requestsPerSec)} scans/s, p50 ${during.p50} ms, p99 ${during.p99} ms`, 'close to alone']);

  // Ceiling: the same rows' column values, read beforehand, written as CSV by the same library.
  const docs: GuestDoc[] = [];
  for await (const doc of service.services.readStore.collection<GuestDoc>('guests').stream({ clientId: client.id, eventId }, {})) docs.push(doc);
  const values = docs.map((doc) => guestColumns.map((column) => column.value(doc)));
  let rawSeconds = Infinity;
  let rawExcelSeconds = Infinity;
  for (let run = 0; run < RUNS; run++) {
    rawSeconds = Math.min(rawSeconds, await rawCsv(values));
    rawExcelSeconds = Math.min(rawExcelSeconds, await rawExcel(values));
  }
  const rawExceljsSeconds = await rawExceljs(values);
  rows.push([`raw CSV of the same ${fmt(docs.length)} rows from memory (ceiling: csv-stringify to a file, no store, no HTTP)`, `${fmt(rawSeconds, 2)} s`, '']);
  rows.push([`raw Excel of the same ${fmt(docs.length)} rows from memory (ceiling: the export's xlsx writer, one sheet, no styles, no store, no thread, no HTTP)`, `${fmt(rawExcelSeconds, 2)} s`, '']);
  rows.push([`the same rows through exceljs's streaming writer, no styles (the library the Excel export used before; reference)`, `${fmt(rawExceljsSeconds, 2)} s`, '']);
  rows[0]![1] = `${rows[0]![1]}, ${ratio(rawSeconds, csvSeconds)}`;
  rows[0]![2] = `${rows[0]![2]}, ≥ 0.5 of the ceiling`;
  rows[1]![1] = `${rows[1]![1]}, ${ratio(rawExcelSeconds, excelSeconds)}`;
  const output = table(['measure', 'figure', 'target'], rows);
  const note =
    `Guests inserted through the command layer (saveGuests, batches of 200) in ${fmt(importSeconds, 1)} s. ` +
    `Time is the whole POST request (read store to file, JSON answer), the best of ${RUNS} runs, as are the ceilings' and the main-thread row's (the exceljs row: one run); ` +
    'RSS sampled every 50 ms from a worker thread, peak minus the value just before, the largest of the runs.';
  console.log(`${output}\n\n${note}`);
  record('Export', `${output}\n\n${note}`);
  await service.close();
}
