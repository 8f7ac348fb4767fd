/**
 * npx tsx bench/profile/scan-bounds.ts [seconds]: how far the door's scans could go if the read
 * models cost the door's thread nothing, the upper bound of moving projections to another
 * thread or process (issue 13, goals 1 and 6). One service, one run:
 *
 *  1. the bare express route (the ceiling);
 *  2. scans as they are (A);
 *  3. scans with the projection runner's read-store writes left out (each batch moves the
 *     checkpoints and nothing else: read-your-writes still waits for the runner, the answer is
 *     the guest's document as it was before the scan) (B). A measurement only, never a mode
 *     of the service;
 *  4. B again, then A again (later phases run slower as the store grows: each kind gets an early
 *     and a late one, and the table gives their mean);
 *  5. the bare route again.
 *
 * Same load as the checkin suite: 50 connections, a different guest's barcode per scan,
 * SQLITE_SYNCHRONOUS=FULL. Each scan phase scans guests of its own, each once.
 */
import { performance } from 'node:perf_hooks';
import type { ReadStore } from '../../src/adapters/readstore/port.js';
import { doorWithGuests } from './door.js';
import { bareRoute } from '../ceiling.js';
import { load } from '../support.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 48_000);
const seconds = Number(process.argv[2] ?? 6);
const { service, eventId, headers, bodies } = await doorWithGuests(GUESTS);
const quarter = Math.floor(bodies.length / 4);

interface Phase {
  requestsPerSec: number;
  p50: number;
  p99: number;
  total: number;
  busyMicros: number;
  cpuMicros: number;
}

async function scans(phase: string[]): Promise<Phase> {
  const elu = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const result = await load({ url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`, method: 'POST', headers, connections: 50, durationSec: seconds, bodies: phase });
  const busy = performance.eventLoopUtilization(elu);
  const used = process.cpuUsage(cpu);
  if (result.total > phase.length) throw new Error(`more scans (${result.total}) than guests of the phase (${phase.length}): raise BENCH_GUESTS`);
  return { ...result, busyMicros: (busy.active / result.total) * 1000, cpuMicros: (used.user + used.system) / result.total };
}

const readStore = (service.runner as unknown as { readStore: ReadStore }).readStore;
const applyBatch = readStore.applyBatch.bind(readStore);
const leftOut = async (phase: string[]): Promise<Phase> => {
  readStore.applyBatch = (_ops, checkpoint) => applyBatch([], checkpoint);
  try {
    return await scans(phase);
  } finally {
    readStore.applyBatch = applyBatch;
  }
};
// A, B, B, A: the store grows and later phases run slower, so each kind gets an early and a late phase.
const before = await bareRoute({ connections: 50, durationSec: 5 });
const phases = [] as Phase[];
for (const [i, leave] of [false, true, true, false].entries()) {
  const guests = bodies.slice(i * quarter, (i + 1) * quarter);
  phases.push(leave ? await leftOut(guests) : await scans(guests));
}
const after = await bareRoute({ connections: 50, durationSec: 5 });
await service.close();
const mean = (a: Phase, b: Phase): Phase => {
  const total = a.total + b.total;
  const weighted = (k: 'busyMicros' | 'cpuMicros') => (a[k] * a.total + b[k] * b.total) / total;
  return { requestsPerSec: (a.requestsPerSec + b.requestsPerSec) / 2, p50: Math.max(a.p50, b.p50), p99: Math.max(a.p99, b.p99), total, busyMicros: weighted('busyMicros'), cpuMicros: weighted('cpuMicros') };
};
const asIs = mean(phases[0]!, phases[3]!);
const withoutReadModels = mean(phases[1]!, phases[2]!);

const bare = (before.requestsPerSec + after.requestsPerSec) / 2;
console.log(`bare route: ${Math.round(before.requestsPerSec)} then ${Math.round(after.requestsPerSec)} req/s; scans/s by phase (A B B A): ${phases.map((p) => Math.round(p.requestsPerSec)).join(', ')}`);
console.log('| scans, 50 connections | scans/s | ratio to the bare route | p50 (worse phase) | p99 (worse phase) | main thread busy per scan | process CPU per scan |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const [name, r] of [
  ['as they are', asIs],
  ['read-model writes left out (upper bound of projections elsewhere)', withoutReadModels],
] as const) {
  console.log(`| ${name} | ${Math.round(r.requestsPerSec)} | ${(r.requestsPerSec / bare).toFixed(2)} | ${r.p50} ms | ${r.p99} ms | ${r.busyMicros.toFixed(0)} µs | ${r.cpuMicros.toFixed(0)} µs |`);
}
process.exit(0);
