/**
 * npx tsx bench/profile/group-commit.ts [seconds]: the embedded event store alone at
 * synchronous=FULL, 50 concurrent appenders (one event each, a stream per append, as scans do),
 * while a 1 ms CPU task per append stands in for the rest of a request. Reports appends/s, the
 * append latency, and how long the event loop was blocked inside the store (time spent in the
 * group commit's synchronous part), for before/after runs of a change to the commit path.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { percentile } from '../support.js';

const seconds = Number(process.argv[2] ?? 5);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'group-commit-'));
const store = new SqliteEventStore(path.join(dir, 'events.sqlite'), { synchronous: 'FULL' });
const latencies: number[] = [];
// Time spent inside the group commit's synchronous part (the private flush), on the event loop.
let inFlush = 0;
let flushes = 0;
const target = store as unknown as { flush: () => void };
const flush = target.flush.bind(store);
target.flush = () => {
  const started = performance.now();
  flush();
  inFlush += performance.now() - started;
  flushes += 1;
};
const until = performance.now() + seconds * 1000;
const elu = performance.eventLoopUtilization();
const cpu = process.cpuUsage();
const work = () => {
  const end = performance.now() + 1;
  while (performance.now() < end);
};
await Promise.all(
  Array.from({ length: 50 }, async () => {
    while (performance.now() < until) {
      work();
      const started = performance.now();
      await store.append(`guest-${randomUUID()}`, [{ id: randomUUID(), type: 'GuestCheckedIn', data: { gate: 'North' }, metadata: { tenantId: 'bench', actor: { type: 'system', id: 'bench' }, correlationId: randomUUID(), occurredAt: new Date().toISOString() } }], 'any');
      latencies.push(performance.now() - started);
    }
  }),
);
const busy = performance.eventLoopUtilization(elu);
const used = process.cpuUsage(cpu);
await store.close();
fs.rmSync(dir, { recursive: true, force: true });
const perAppend = (x: number) => (x / latencies.length).toFixed(0);
console.log(
  `${(latencies.length / seconds).toFixed(0)} appends/s, append p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms; ` +
    `per append: event loop busy ${perAppend(busy.active * 1000)} µs, CPU ${perAppend(used.user + used.system)} µs (1,000 µs of it is the stand-in work); ` +
    `group commits ${flushes}, event loop inside them ${perAppend(inFlush * 1000)} µs per append (${(inFlush / flushes).toFixed(2)} ms per commit)`,
);
