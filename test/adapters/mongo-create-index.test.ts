/**
 * The MongoDB read store's createIndex against FerretDB's "SQL logic error: index … already
 * exists" (src/adapters/readstore/mongo.ts): seen during projection rebuilds on FerretDB's SQLite
 * backend, it cannot be brought about on purpose, so the driver's createIndex is made to answer
 * it here, once, around a real server. Needs a MongoDB-protocol server: skipped without
 * MONGO_URL (scripts/test-servers.sh starts FerretDB; CI sets it).
 */
import { Collection as DriverCollection, MongoClient, MongoServerError } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MongoReadStore } from '../../src/adapters/readstore/mongo.js';

const url = process.env.MONGO_URL;
const dbName = `create_index_${Date.now()}_${process.pid}`;
const ferretError = (name: string) => new MongoServerError({ message: `SQL logic error: index things_${name} already exists (1)`, ok: 0 });

describe.skipIf(!url)('MongoDB read store: createIndex when the server says the index already exists (MONGO_URL; skipped without one, always set under CI)', () => {
  let store: MongoReadStore;
  beforeAll(() => {
    store = new MongoReadStore({ url: url!, dbName });
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    const client = new MongoClient(url!);
    await client.db(dbName).dropDatabase().catch(() => undefined);
    await client.close();
    await store.close();
  });

  const indexNames = async () => {
    const client = new MongoClient(url!);
    try {
      return (await client.db(dbName).collection('things').listIndexes().toArray()).map((i) => i.name);
    } finally {
      await client.close();
    }
  };

  it('succeeds when the index is there after all, as MongoDB answers for an existing identical index', async () => {
    const real = DriverCollection.prototype.createIndex;
    const spy = vi.spyOn(DriverCollection.prototype, 'createIndex').mockImplementationOnce(async function (this: DriverCollection, keys, options) {
      await real.call(this, keys, options);
      throw ferretError('barcode');
    });
    await store.collection('things').createIndex({ name: 'barcode', keys: { eventId: 1, barcode: 1 }, unique: true });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(await indexNames()).toContain('barcode');
  });

  it('asks again when the index is not there', async () => {
    const spy = vi.spyOn(DriverCollection.prototype, 'createIndex').mockRejectedValueOnce(ferretError('updated'));
    await store.collection('things').createIndex({ name: 'updated', keys: { eventId: 1, updated: 1 } });
    expect(spy).toHaveBeenCalledTimes(2);
    expect(await indexNames()).toContain('updated');
  });

  it('passes any other server error on, and gives up after five answers of the same', async () => {
    vi.spyOn(DriverCollection.prototype, 'createIndex').mockRejectedValueOnce(new MongoServerError({ message: 'not authorized', ok: 0 }));
    await expect(store.collection('things').createIndex({ name: 'other', keys: { other: 1 } })).rejects.toThrow('not authorized');
    vi.restoreAllMocks();
    const spy = vi.spyOn(DriverCollection.prototype, 'createIndex').mockRejectedValue(ferretError('never'));
    await expect(store.collection('things').createIndex({ name: 'never', keys: { never: 1 } })).rejects.toThrow(/already exists/);
    expect(spy).toHaveBeenCalledTimes(5);
  });
});
