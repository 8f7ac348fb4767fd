/**
 * npx tsx bench/profile/import-while-listing.ts: the embedded read store taking 20,000 more guests
 * (batches of 500) into an event of 100,000 whose name-ordered index group a list had built, beside
 * the same writes with no list made, and with a list after every batch (an organizer's screen
 * refreshing during an import). The read store alone: no HTTP, no event store.
 */
import { performance } from 'node:perf_hooks';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { WriteOp } from '../../src/adapters/readstore/port.js';

const byName = { sort: { lastNameLower: 1, firstNameLower: 1 } as const, limit: 50 };

async function measure(listed: 'never' | 'once before' | 'after every batch'): Promise<void> {
  const store = new EmbeddedReadStore(':memory:');
  const guests = store.collection('guests');
  await guests.createIndex({ name: 'event_name', keys: { eventId: 1, lastNameLower: 1, firstNameLower: 1 } });
  const write = async (from: number, to: number, listEachBatch: boolean) => {
    for (let start = from; start < to; start += 500) {
      const ops: WriteOp[] = [];
      for (let i = start; i < start + 500; i++) {
        const doc = { eventId: 'e1', lastNameLower: `last${(i * 104729) % 5000}`, firstNameLower: `first${i % 997}` };
        ops.push({ kind: 'update', collection: 'guests', id: `g-${String(i).padStart(7, '0')}`, update: { $set: doc }, upsert: true });
      }
      await store.applyBatch(ops, { name: 'projection:guests', position: start + 499 });
      if (listEachBatch) await guests.find({ eventId: 'e1' }, byName);
    }
  };
  await write(0, 100_000, false);
  if (listed !== 'never') await guests.find({ eventId: 'e1' }, byName);
  const started = performance.now();
  await write(100_000, 120_000, listed === 'after every batch');
  console.log(`listed ${listed.padEnd(17)}: 20,000 more guests in ${(performance.now() - started).toFixed(0)} ms`);
  await store.close();
}

await measure('never');
await measure('once before');
await measure('after every batch');
