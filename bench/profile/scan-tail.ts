/**
 * npx tsx bench/profile/scan-tail.ts [seconds]: where the door's p99 comes from. The load of
 * scan-ratio.ts (20,000 guests, 50 connections, a different guest per scan, FULL) without the bare
 * route, and beside it the door's event loop: every turn that held it 10 ms or more (a 2 ms probe
 * timer's lateness), and V8's garbage-collection pauses by kind. Load-independent evidence: how
 * many long turns, and how much of them GC explains, per thousand scans.
 */
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { doorWithGuests } from './door.js';
import diagnostics_channel from 'node:diagnostics_channel';
import fs from 'node:fs';
import { load, percentile } from '../support.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { ProjectionRunner } from '../../src/projections/runner.js';

// The stages a scan waits on, timed from here (nothing in the service changes): the WAL fsync in
// libuv's pool, the group commit (one flush, synchronous), the projection batch (wall time).
const fsyncs: number[] = [];
let fsyncsRunning = 0;
let fsyncOverlap = 0;
const realFsync = fs.fsync;
(fs as { fsync: typeof fs.fsync }).fsync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
  const started = performance.now();
  if (fsyncsRunning++ > 0) fsyncOverlap++;
  realFsync(fd, (error) => {
    fsyncsRunning--;
    if (measuring) fsyncs.push(performance.now() - started);
    callback(error);
  });
}) as typeof fs.fsync;
const flushes: { n: number; ms: number }[] = [];
const store = SqliteEventStore.prototype as unknown as { flush(): void; pending: unknown[] };
const realFlush = store.flush;
store.flush = function (this: { pending: unknown[] }) {
  const n = this.pending.length;
  const started = performance.now();
  realFlush.call(this);
  if (measuring && n > 0) flushes.push({ n, ms: performance.now() - started });
};
const batches: { n: number; ms: number }[] = [];
const runner = ProjectionRunner.prototype as unknown as { applyBatch(events: unknown[], ...rest: unknown[]): Promise<void> };
const realApply = runner.applyBatch;
runner.applyBatch = async function (this: unknown, events: unknown[], ...rest: unknown[]) {
  const started = performance.now();
  try {
    return await realApply.call(this, events, ...rest);
  } finally {
    if (measuring) batches.push({ n: events.length, ms: performance.now() - started });
  }
};
let measuring = false;

const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const seconds = Number(process.argv[2] ?? 8);
const door = await doorWithGuests(GUESTS);
const { service, eventId, bodies, headers } = door;
// BENCH_SETTLE_MS: a pause between the import and the scans (work the import left behind finishes first).
await new Promise((resolve) => setTimeout(resolve, Number(process.env.BENCH_SETTLE_MS ?? 0)));

// Each answer's time in the service (request in to response finished), by second of the run.
const served: { at: number; ms: number }[] = [];
const startedAt = new WeakMap<object, number>();
diagnostics_channel.subscribe('http.server.request.start', (message) => {
  startedAt.set((message as { response: object }).response, performance.now());
});
diagnostics_channel.subscribe('http.server.response.finish', (message) => {
  const started = startedAt.get((message as { response: object }).response);
  if (started !== undefined && measuring) served.push({ at: started, ms: performance.now() - started });
});

const gcKinds = new Map<number, { count: number; ms: number; max: number }>();
const gcs: { start: number; ms: number; kind: number }[] = [];
const observer = new PerformanceObserver((list) => {
  if (!measuring) return;
  for (const entry of list.getEntries()) {
    const kind = (entry as unknown as { detail?: { kind: number } }).detail?.kind ?? 0;
    const k = gcKinds.get(kind) ?? { count: 0, ms: 0, max: 0 };
    k.count++; k.ms += entry.duration; k.max = Math.max(k.max, entry.duration);
    gcKinds.set(kind, k);
    gcs.push({ start: entry.startTime, ms: entry.duration, kind });
  }
});
observer.observe({ entryTypes: ['gc'] });
const blocks: { at: number; ms: number }[] = [];
const PROBE = 2;
let last = performance.now();
const probe = setInterval(() => {
  const now = performance.now();
  const late = now - last - PROBE;
  if (measuring && late >= 10) blocks.push({ at: last, ms: late });
  last = now;
}, PROBE);
const eld = monitorEventLoopDelay({ resolution: 1 });
measuring = true;
eld.enable();
const t0 = performance.now();
const scans = await load({ url: `${service.url}/checkin/v1/api/guests/${eventId}/checkin`, method: 'POST', headers, connections: 50, durationSec: seconds, bodies });
eld.disable();
measuring = false;
clearInterval(probe);
await service.close();
const per1k = (n: number) => ((n * 1000) / scans.total).toFixed(2);
const gcIn = (b: { at: number; ms: number }) => gcs.filter((g) => g.start + g.ms > b.at && g.start < b.at + b.ms + PROBE).reduce((s, g) => s + g.ms, 0);
const gcOfBlocks = blocks.reduce((s, b) => s + gcIn(b), 0);
const blockMs = blocks.reduce((s, b) => s + b.ms, 0);
const sorted = [...blocks].sort((a, b) => b.ms - a.ms);
console.log(`scans: ${scans.total} in ${seconds} s, ${Math.round(scans.requestsPerSec)}/s, p50 ${scans.p50} ms, p99 ${scans.p99} ms (2xx after the first: p99 ${scans.accepted.p99}, max ${scans.accepted.max}; first answers max ${scans.first.max}), non-2xx ${scans.non2xx}`);
console.log(`event loop delay (1 ms timer): p50 ${(eld.percentile(50) / 1e6).toFixed(1)} p99 ${(eld.percentile(99) / 1e6).toFixed(1)} max ${(eld.max / 1e6).toFixed(1)} ms`);
console.log(`turns ≥ 10 ms: ${blocks.length} (${per1k(blocks.length)} per 1k scans), ≥ 20 ms: ${blocks.filter((b) => b.ms >= 20).length}, ≥ 40 ms: ${blocks.filter((b) => b.ms >= 40).length}; total ${blockMs.toFixed(0)} ms, GC inside them ${gcOfBlocks.toFixed(0)} ms`);
console.log(`longest: ${sorted.slice(0, 8).map((b) => `${b.ms.toFixed(0)} (gc ${gcIn(b).toFixed(0)}) @${((b.at - t0) / 1000).toFixed(2)}s`).join(', ')}`);
const names: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weakcb' };
console.log(`gc: ${[...gcKinds].map(([k, v]) => `${names[k] ?? k} ${v.count}× ${v.ms.toFixed(0)} ms (max ${v.max.toFixed(1)})`).join(', ')}; per 1k scans ${per1k([...gcKinds.values()].reduce((s, v) => s + v.ms, 0))} ms`);
const bySecond: number[][] = [];
for (const r of served) (bySecond[Math.floor((r.at - t0) / 1000)] ??= []).push(r.ms);
console.log(`in the service: p50 ${percentile(served.map((r) => r.ms), 50).toFixed(0)} p99 ${percentile(served.map((r) => r.ms), 99).toFixed(0)} ms; p99 by second: ${bySecond.map((v) => percentile(v, 99).toFixed(0)).join(' ')}; without the first second: p99 ${percentile(served.filter((r) => r.at - t0 >= 1000).map((r) => r.ms), 99).toFixed(0)}`);
const stat = (values: number[]) => `${values.length}×, p50 ${percentile(values, 50).toFixed(1)} p90 ${percentile(values, 90).toFixed(1)} p99 ${percentile(values, 99).toFixed(1)} max ${Math.max(...values).toFixed(1)}`;
console.log(`fsync ms: ${stat(fsyncs)} (started while another ran: ${fsyncOverlap})`);
console.log(`group commit: appends per group ${stat(flushes.map((f) => f.n))}; ms ${stat(flushes.map((f) => f.ms))}`);
console.log(`projection batch: events ${stat(batches.map((b) => b.n))}; wall ms ${stat(batches.map((b) => b.ms))}`);
process.exit(0);
