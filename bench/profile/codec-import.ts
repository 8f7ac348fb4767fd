/**
 * npx tsx bench/profile/codec-import.ts [rounds]: what the personal-data codec adds to an import's
 * event-store work, without HTTP, the deciders or the read store: batches of 200 new guests
 * (GuestRegistered in a stream of its own and a KeyReserved under an HMAC-named reservation,
 * what an upsert appends) appended to the embedded event store (its key store in the same file,
 * as the service runs it) and read back through a subscription (what the projections do), plain
 * and through sealedEventStore, alternating; CPU of this process per guest (process.cpuUsage).
 * BENCH_GUESTS (default 10,000) per run. PROFILE_OUT=name writes CPU profiles of the first round (name-plain.cpuprofile, name-sealed.cpuprofile).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import type { EventStore } from '../../src/adapters/eventstore/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedKeyStore } from '../../src/adapters/keystore/embedded.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { sealedEventStore } from '../../src/personal-data/sealed-event-store.js';
import { keyringOf } from '../../src/shared/encryption.js';
import { guestBatch } from './guest-batches.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 10_000);
const ROUNDS = Number(process.argv[2] ?? 3);

async function run(sealed: boolean): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codec-import-'));
  const inner = new SqliteEventStore(path.join(dir, 'events.sqlite'), { synchronous: 'FULL' });
  const store: EventStore = sealed ? sealedEventStore(inner, new DataKeys(EmbeddedKeyStore.inEventStore(inner), keyringOf([{ id: 'k', key: randomBytes(32) }]))) : inner;
  const batches = Array.from({ length: GUESTS / 200 }, (_, b) => guestBatch(b * 200));
  const subscription = store.subscribeToAll({ batchSize: 500 });
  let seen = 0;
  const consumed = (async () => {
    for await (const delivered of subscription) {
      for (const e of delivered.events) if (e.type === 'GuestRegistered' && typeof e.data.email !== 'string') throw new Error('not opened');
      seen += delivered.events.length;
      if (seen >= GUESTS * 2) break;
    }
  })();
  const since = process.cpuUsage();
  for (const appends of batches) await store.appendMany(appends);
  await consumed;
  const used = process.cpuUsage(since);
  subscription.stop();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return (used.user + used.system) / GUESTS;
}

await run(false);
await run(true);
const session = process.env.PROFILE_OUT ? new Session() : undefined;
if (session) session.connect();
/** One run, profiled into PROFILE_OUT-plain / PROFILE_OUT-sealed the first time when PROFILE_OUT is set. */
async function measured(sealed: boolean, round: number): Promise<number> {
  if (!session || round > 0) return run(sealed);
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  const us = await run(sealed);
  const { profile } = await session.post('Profiler.stop');
  fs.writeFileSync(`${process.env.PROFILE_OUT}-${sealed ? 'sealed' : 'plain'}.cpuprofile`, JSON.stringify(profile));
  return us;
}
const plain: number[] = [];
const withCodec: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  plain.push(await measured(false, round));
  withCodec.push(await measured(true, round));
  console.log(`round ${round + 1}: plain ${plain.at(-1)!.toFixed(1)} µs, sealed ${withCodec.at(-1)!.toFixed(1)} µs per guest (+${(withCodec.at(-1)! - plain.at(-1)!).toFixed(1)})`);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`median: plain ${median(plain).toFixed(1)} µs, sealed ${median(withCodec).toFixed(1)} µs, codec +${(median(withCodec) - median(plain)).toFixed(1)} µs per guest`);
