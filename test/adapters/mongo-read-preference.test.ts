/**
 * The MongoDB read store reads what its replay guards decide on from the primary, whatever read
 * preference MONGO_URL asks for.
 *
 * A read preference in the connection string (`readPreference=secondaryPreferred`, which
 * docs/read-models.md says works) applies to every read of the client, and "reads from secondary
 * members ... may return data that does not reflect the state of the data on the primary"
 * (https://www.mongodb.com/docs/manual/core/read-preference/). After a restart the runner starts
 * from `getCheckpoint`: a lagging secondary answers an older position, the runner hands batches
 * that were applied again, and `applyBatch` reads the checkpoint marks from the secondary too:
 * no `pending` mark, so it writes unguarded and applies each `$inc` twice. FerretDB is one server
 * and cannot lag: the read preference each read is sent with is checked instead, as the driver
 * takes it (the operation's `readPreference`, else the collection's). The key store likewise: a
 * lagging secondary has no row yet for a key just written, and a guest without a row reads as
 * erased. Needs a MongoDB-protocol server (test/support/real-servers.ts): skipped, with the reason, without one.
 */
import { Collection as DriverCollection, MongoClient, type ReadPreference } from 'mongodb';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { MongoReadStore } from '../../src/adapters/readstore/mongo.js';
import { MongoKeyStore } from '../../src/adapters/keystore/mongo.js';
import { realServer } from '../support/real-servers.js';

// MONGO_URL, else a container; under CI=true a missing server fails the run instead of skipping.
const mongo = await realServer('mongo');
afterAll(() => mongo.stop());
const url = mongo.url;
const dbName = `read_pref_${Date.now()}_${process.pid}`;
const withSecondary = () => `${url!}${url!.includes('?') ? '&' : url!.endsWith('/') ? '?' : '/?'}readPreference=secondaryPreferred`;

/** Every find and findOne from now on, by collection, with the read preference it goes with. */
function recordReads(): { collection: string; mode: string }[] {
  const reads: { collection: string; mode: string }[] = [];
  const record = (collection: DriverCollection, options: { readPreference?: ReadPreference | string } | undefined) => {
    const asked = options?.readPreference ?? collection.readPreference;
    reads.push({ collection: collection.collectionName, mode: typeof asked === 'string' ? asked : (asked?.mode ?? 'primary') });
  };
  const find = DriverCollection.prototype.find;
  const findOne = DriverCollection.prototype.findOne;
  vi.spyOn(DriverCollection.prototype, 'find').mockImplementation(function (this: DriverCollection, ...args: Parameters<typeof find>) {
    record(this, args[1] as never);
    return find.apply(this, args);
  } as typeof find);
  vi.spyOn(DriverCollection.prototype, 'findOne').mockImplementation(function (this: DriverCollection, ...args: unknown[]) {
    record(this, args[1] as never);
    return (findOne as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof findOne);
  return reads;
}

describe.skipIf(!url)(`MongoDB stores: reads that decide on the primary${url ? '' : ` (skipped: ${mongo.skipReason})`}`, () => {
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    const client = new MongoClient(url!);
    await client.db(dbName).dropDatabase().catch(() => undefined);
    await client.close();
  });

  it('reads checkpoints, checkpoint marks and a swap\'s answer from the primary though the URL asks for secondaryPreferred', async () => {
    const store = new MongoReadStore({ url: withSecondary(), dbName });
    const reads = recordReads();
    try {
      const op = (position: number) => ({ kind: 'update' as const, collection: 'counters', id: 'c1', update: { $inc: { n: 1 } }, upsert: true, position });
      await store.applyBatch([op(1)], { name: 'projection:counters', position: 1 });
      expect(await store.getCheckpoint('projection:counters')).toBe(1);
      await store.collection('leases').swap('lease', null, { pid: 1 });
      const guarded = reads.filter((r) => r.collection === '_checkpoints' || r.collection === 'leases');
      expect(guarded.length).toBeGreaterThanOrEqual(3);
      expect(guarded.filter((r) => r.mode !== 'primary')).toEqual([]);
      // A document read for a caller follows the URL's read preference, as before.
      await store.collection('counters').get('c1');
      expect(reads.at(-1)).toEqual({ collection: 'counters', mode: 'secondaryPreferred' });
    } finally {
      await store.close();
    }
  });

  it('reads data keys from the primary though the URL asks for secondaryPreferred', async () => {
    const keys = new MongoKeyStore({ url: withSecondary(), dbName });
    const reads = recordReads();
    try {
      const at = '2026-01-01T00:00:00.000Z';
      await keys.insert([{ guestId: 'g1', wrapped: 'k1', masterKeyId: 'm1', createdAt: at }]);
      expect(await keys.get(['g1'])).toEqual([{ guestId: 'g1', wrapped: 'k1', masterKeyId: 'm1', createdAt: at }]);
      expect(await keys.wrappedUnder('m2', 10)).toHaveLength(1);
      expect(reads.length).toBeGreaterThanOrEqual(2);
      expect(reads.filter((r) => r.mode !== 'primary')).toEqual([]);
    } finally {
      await keys.close();
    }
  });
});
