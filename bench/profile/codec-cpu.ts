/**
 * npx tsx bench/profile/codec-cpu.ts [rounds]: the personal-data codec's own CPU per new guest, with
 * nothing under it: sealedEventStore over a store that only counts (appendMany, and the
 * subscription's read back of what was appended), its keys staged in memory (KeyStore.stage, as
 * the embedded key store does before the append writes them). Against it, the two AES-256-GCM
 * seals each new guest needs (sealGcm alone: the key wrapped, the fields sealed): what is left of
 * the codec's cost (over the same null store without it) is our code. Batches of 200 guests, a GuestRegistered and a KeyReserved each (an upsert's events).
 */
import { randomBytes } from 'node:crypto';
import type { EventStore, StoredEvent, StreamAppend } from '../../src/adapters/eventstore/port.js';
import type { KeyStore, StoredDataKey } from '../../src/adapters/keystore/port.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { sealedEventStore } from '../../src/personal-data/sealed-event-store.js';
import { keyringOf, sealGcm } from '../../src/shared/encryption.js';
import { benchClient, guestBatch } from './guest-batches.js';

const GUESTS = Number(process.env.BENCH_GUESTS ?? 20_000);
const ROUNDS = Number(process.argv[2] ?? 5);
const client = benchClient;

/** Keeps the last append's events for the read back; stages every key (nothing stored). */
function nullStores(): { inner: EventStore; keys: KeyStore; last: () => StoredEvent[] } {
  let last: StoredEvent[] = [];
  let position = 0;
  const inner = {
    kind: 'null',
    atomicBatches: true,
    async appendMany(appends: StreamAppend[]) {
      last = appends.flatMap((a) => a.events.map((e) => ({ ...e, streamName: a.streamName, revision: 0, position: position++, recordedAt: '' })));
      return appends.map(() => ({ nextRevision: 0, position }));
    },
    subscribeToAll() {
      return { stop() {}, async *[Symbol.asyncIterator]() { yield { events: last, position }; } };
    },
  } as unknown as EventStore;
  const keys = {
    kind: 'null',
    async get() {
      return [];
    },
    stage: (rows: StoredDataKey[]) => new Set(rows.map((r) => r.guestId)),
  } as unknown as KeyStore;
  return { inner, keys, last: () => last };
}

async function codecRun(sealed = true): Promise<number> {
  const { inner, keys } = nullStores();
  const store = sealed ? sealedEventStore(inner, new DataKeys(keys, keyringOf([{ id: 'k', key: randomBytes(32) }]))) : inner;
  const batches = Array.from({ length: GUESTS / 200 }, (_, b) => guestBatch(b * 200));
  const since = process.cpuUsage();
  for (const appends of batches) {
    await store.appendMany(appends);
    for await (const delivered of store.subscribeToAll()) {
      if (typeof delivered.events[0]!.data.email !== 'string') throw new Error('not opened');
      // (what a projection would do with the events: nothing here)
      break;
    }
  }
  const used = process.cpuUsage(since);
  return (used.user + used.system) / GUESTS;
}

function sealsRun(): number {
  const master = randomBytes(32);
  const fields = JSON.stringify({ firstName: 'First1', lastName: 'Last1', email: 'guest1@example.com', additionalInfo: 'Table 12', barcode: 'BC-1', customId: 'crm-1' });
  const since = process.cpuUsage();
  for (let start = 0; start < GUESTS; start += 200) {
    // Randomness drawn per batch, as the codec draws it (a draw per seal costs more than the cipher).
    const keys = randomBytes(44 * 200);
    const ivs = randomBytes(12 * 200);
    for (let k = 0; k < 200; k++) {
      const key = keys.subarray(44 * k, 44 * k + 32);
      sealGcm(master, keys.subarray(44 * k + 32, 44 * k + 44), Buffer.from(`personal-data-key:${client}:${start + k}`), key.toString('base64url'));
      sealGcm(key, ivs.subarray(12 * k, 12 * k + 12), Buffer.from(`${client}:${start + k}`), fields);
    }
  }
  const used = process.cpuUsage(since);
  return (used.user + used.system) / GUESTS;
}

await codecRun(false);
await codecRun();
sealsRun();
const plain: number[] = [];
const codec: number[] = [];
const seals: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  plain.push(await codecRun(false));
  codec.push(await codecRun());
  seals.push(sealsRun());
  console.log(`round ${round + 1}: the null store alone ${plain.at(-1)!.toFixed(1)} µs, through the codec ${codec.at(-1)!.toFixed(1)} µs, the two seals ${seals.at(-1)!.toFixed(1)} µs per guest`);
}
const best = (xs: number[]) => Math.min(...xs);
const added = best(codec) - best(plain);
console.log(`best: the codec adds ${added.toFixed(1)} µs per guest, the two seals ${best(seals).toFixed(1)} µs of it, our code ${(added - best(seals)).toFixed(1)} µs`);
