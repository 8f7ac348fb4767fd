/**
 * The MongoDB key store's write and read concerns: a data key must survive a failover once an
 * event is sealed with it, so every key write waits for a majority and the journal, and every read
 * sees only majority-committed keys, also when the connection string asks for `w=1`. A replica-set
 * rollback cannot be staged here (FerretDB is one server): the concerns of each command sent are
 * checked with the driver's command monitoring, and the key store's behaviour on the server.
 * Needs a MongoDB-protocol server: skipped without MONGO_URL.
 */
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { MongoKeyStore } from '../../src/adapters/keystore/mongo.js';

const url = process.env.MONGO_URL;
const dbName = `keystore_${Date.now()}_${process.pid}`;

describe.skipIf(!url)('MongoDB key store: majority write and read concerns (MONGO_URL; skipped without one)', () => {
  afterAll(async () => {
    const client = new MongoClient(url!);
    await client.db(dbName).dropDatabase().catch(() => undefined);
    await client.close();
  });

  it('sends every key write with w: majority and the journal, and every read with read concern majority, though the URL says w=1', async () => {
    const withW1 = `${url!}${url!.includes('?') ? '&' : url!.endsWith('/') ? '?' : '/?'}w=1`;
    const store = new MongoKeyStore({ url: withW1, dbName });
    const client = (store as unknown as { client: MongoClient }).client;
    const sent: CommandStartedEvent[] = [];
    client.on('commandStarted', (event) => sent.push(event));
    // Command monitoring: MongoClient has a setter for it (lib/mongo_client.js), missing from its types.
    (client as unknown as { monitorCommands: boolean }).monitorCommands = true;
    try {
      const at = '2026-01-01T00:00:00.000Z';
      expect(await store.insert([{ guestId: 'g1', wrapped: 'k1', masterKeyId: 'm1', createdAt: at }])).toEqual(new Set(['g1']));
      expect(await store.insert([{ guestId: 'g1', wrapped: 'other', masterKeyId: 'm1', createdAt: at }])).toEqual(new Set());
      expect(await store.get(['g1'])).toEqual([{ guestId: 'g1', wrapped: 'k1', masterKeyId: 'm1', createdAt: at }]);
      expect(await store.wrappedUnder('m2', 10)).toHaveLength(1);
      // The start's check that PII_MASTER_KEYS opens every stored key (docs/personal-data.md, Rotation).
      expect(await store.countWrappedOutside(['m2'])).toEqual([{ masterKeyId: 'm1', count: 1 }]);
      expect(await store.countWrappedOutside(['m1', 'm2'])).toEqual([]);
      await store.rewrap('g1', 'k2', 'm2');
      expect(await store.countWrappedOutside(['m2'])).toEqual([]);
      await store.erase('g1', at);
      expect(await store.get(['g1'])).toEqual([{ guestId: 'g1', createdAt: at, erasedAt: at }]);
      const writes = sent.filter((e) => e.commandName === 'update');
      const reads = sent.filter((e) => e.commandName === 'find');
      expect(writes.length).toBeGreaterThanOrEqual(4);
      expect(reads.length).toBeGreaterThanOrEqual(3);
      for (const write of writes) expect(write.command.writeConcern).toEqual({ w: 'majority', j: true });
      for (const read of reads) expect(read.command.readConcern).toEqual({ level: 'majority' });
    } finally {
      await store.close();
    }
  });
});
