/**
 * npx tsx bench/profile/import-pii-pairs.ts [pairs]: the import of bench/personal-data.ts alone
 * (BENCH_GUESTS, default 10,000, upsert in batches of 200), PII_ENCRYPTION off and on alternating
 * (default 3 pairs, after one unmeasured run of each), each in a fresh service in this process; prints
 * the CPU time of this process per guest (process.cpuUsage: the service and the client) for each run,
 * the median cost, and (Linux) the CPU per guest of each thread, summed over the pairs.
 */
import fs from 'node:fs';
import { createClient, startTestService } from '../../test/support/service.js';

/** CPU ticks (utime + stime) of each thread of this process, by thread id, with its name (Linux /proc only). */
function threadTicks(): Map<string, { name: string; ticks: number }> {
  const threads = new Map<string, { name: string; ticks: number }>();
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      threads.set(tid, { name: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(fields[11]) + Number(fields[12]) });
    }
  } catch {
    // not Linux: no per-thread figures
  }
  return threads;
}

const startup = new Set(threadTicks().keys());

/**
 * CPU ms between two snapshots by kind of thread (every thread of Node is named "node"): the main
 * thread (the process id's), the threads there at start (V8's platform workers: parallel and
 * concurrent GC), those started later (libuv's pool: fsync, randomBytes; worker threads: the
 * WAL checkpointers).
 */
function byThread(before: Map<string, { name: string; ticks: number }>, after: Map<string, { name: string; ticks: number }>): Map<string, number> {
  const ms = new Map<string, number>();
  for (const [tid, { name, ticks }] of after) {
    const label = tid === String(process.pid) ? 'main' : startup.has(tid) ? 'V8 platform (GC)' : `libuv pool, workers (${name})`;
    ms.set(label, (ms.get(label) ?? 0) + ((ticks - (before.get(tid)?.ticks ?? 0)) * 1000) / 100);
  }
  return ms;
}

const GUESTS = Number(process.env.BENCH_GUESTS ?? 10_000);
const PAIRS = Number(process.argv[2] ?? 3);

const threadTotals = { on: new Map<string, number>(), off: new Map<string, number>() };

async function importCpuUs(encryption: 'on' | 'off'): Promise<number> {
  const service = await startTestService({ LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'FULL', PII_ENCRYPTION: encryption });
  try {
    const client = await createClient(service);
    const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Stadium', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' });
    const eventId = event.body.id as string;
    const headers = { authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey, 'content-type': 'application/json' };
    const threadsBefore = threadTicks();
    const since = process.cpuUsage();
    for (let start = 0; start < GUESTS; start += 200) {
      const batch = Array.from({ length: Math.min(200, GUESTS - start) }, (_, k) => {
        const i = start + k;
        return { firstName: `First${i % 997}`, lastName: `Last${i % 1009}`, email: `guest${i}@example.com`, barcode: `BC-${i}`, customId: `crm-${i}`, plusOnes: i % 3, additionalInfo: 'Table 12' };
      });
      const reply = await fetch(`${service.url}/checkin/v1/api/guests/${eventId}/upsert`, { method: 'PUT', headers, body: JSON.stringify(batch) });
      if (reply.status !== 204) throw new Error(`upsert failed: ${reply.status} ${await reply.text()}`);
    }
    const used = process.cpuUsage(since);
    for (const [name, ms] of byThread(threadsBefore, threadTicks())) threadTotals[encryption].set(name, (threadTotals[encryption].get(name) ?? 0) + ms);
    return (used.user + used.system) / GUESTS;
  } finally {
    await service.close();
  }
}

await importCpuUs('off');
await importCpuUs('on');
threadTotals.on.clear();
threadTotals.off.clear();
const costs: number[] = [];
for (let pair = 0; pair < PAIRS; pair++) {
  const off = await importCpuUs('off');
  const on = await importCpuUs('on');
  costs.push((on - off) / off);
  console.log(`pair ${pair + 1}: off ${off.toFixed(0)} µs, on ${on.toFixed(0)} µs per guest: +${(on - off).toFixed(0)} µs, ${(((on - off) / off) * 100).toFixed(1)}%`);
}
costs.sort((a, b) => a - b);
console.log(`median cost ${(costs[Math.floor(costs.length / 2)]! * 100).toFixed(1)}% (${costs.map((c) => (c * 100).toFixed(1)).join(', ')})`);
const names = [...new Set([...threadTotals.off.keys(), ...threadTotals.on.keys()])];
for (const name of names) {
  const off = ((threadTotals.off.get(name) ?? 0) * 1000) / (GUESTS * PAIRS);
  const on = ((threadTotals.on.get(name) ?? 0) * 1000) / (GUESTS * PAIRS);
  if (off + on > 0) console.log(`  thread ${name.padEnd(16)} off ${off.toFixed(1).padStart(6)} µs, on ${on.toFixed(1).padStart(6)} µs per guest`);
}
