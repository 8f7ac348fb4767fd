import { MongoClient, ReadPreference, type Collection } from 'mongodb';
import type { KeyStore, StoredDataKey } from './port.js';
import type { Logger } from '../../shared/logger.js';
import { serverSelectionDefault, unreachableFor } from '../readstore/mongo.js';

export const KEY_CONCERNS = {
  writeConcern: { w: 'majority', journal: true },
  readConcern: { level: 'majority' },
  readPreference: ReadPreference.primary,
} as const;

interface KeyDoc {
  _id: string;
  wrapped?: string | null;
  masterKeyId?: string | null;
  createdAt: string;
  erasedAt?: string;
}

/**
 * MongoDB key store: the `personal_data_keys` collection of the read store's database (MONGO_URL).
 *
 * A data key must outlive any failover once an event is sealed with it: a key acknowledged by a
 * primary alone and rolled back when another member takes over leaves those events unreadable for
 * good. So the collection writes with `w: "majority"` and the journal, whatever the connection
 * string says (MongoDB's implicit default is majority since 5.0, but `w: 1` with an arbiter in the
 * replica set, or when the URL asks for it), and reads with read concern `majority`, so a key
 * another process wrote is only used once it cannot be rolled back. Reads go to the primary whatever
 * the URL's read preference: a lagging secondary has no row yet for a key just written (here, or by
 * the process whose insert won), and a guest without a row reads as one without a key (erased).
 */
export class MongoKeyStore implements KeyStore {
  readonly kind = 'mongodb';
  private readonly client: MongoClient;
  private readonly keys: Collection<KeyDoc>;
  private closing = false;
  private readonly unreachable: (error: unknown) => never;

  constructor({ url, dbName, logger }: { url: string; dbName: string; logger?: Pick<Logger, 'warn'> }) {
    // A server that is down fails a key's read or write within 5 s, answered 503 (docs/read-models.md).
    this.client = new MongoClient(url, { ignoreUndefined: true, ...serverSelectionDefault(url) });
    this.keys = this.client.db(dbName).collection<KeyDoc>('personal_data_keys', KEY_CONCERNS);
    this.unreachable = unreachableFor(this.client, () => this.closing, { ...(logger ? { logger } : {}) });
  }

  async get(guestIds: string[]): Promise<StoredDataKey[]> {
    if (guestIds.length === 0) return [];
    const docs = await this.keys.find({ _id: { $in: guestIds } }).toArray().catch(this.unreachable);
    return docs.map(fromDoc);
  }

  async insert(keys: StoredDataKey[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const result = await this.keys.bulkWrite(
      keys.map((k) => ({
        updateOne: {
          filter: { _id: k.guestId },
          update: { $setOnInsert: { wrapped: k.wrapped, masterKeyId: k.masterKeyId, createdAt: k.createdAt } },
          upsert: true,
        },
      })),
      { ordered: false },
    ).catch(this.unreachable);
    return new Set(Object.values(result.upsertedIds).map(String));
  }

  async erase(guestId: string, at: string): Promise<void> {
    await this.keys.updateOne({ _id: guestId }, { $set: { wrapped: null, masterKeyId: null }, $setOnInsert: { createdAt: at } }, { upsert: true });
    await this.keys.updateOne({ _id: guestId, erasedAt: { $exists: false } }, { $set: { erasedAt: at } });
  }

  async wrappedUnder(notMasterKeyId: string, limit: number): Promise<StoredDataKey[]> {
    const docs = await this.keys.find({ wrapped: { $type: 'string' }, masterKeyId: { $ne: notMasterKeyId } }).limit(limit).toArray();
    return docs.map(fromDoc);
  }

  async oneWrappedUnder(masterKeyId: string): Promise<StoredDataKey | undefined> {
    const doc = await this.keys.findOne({ wrapped: { $type: 'string' }, masterKeyId });
    return doc ? fromDoc(doc) : undefined;
  }

  async countWrappedOutside(masterKeyIds: string[]): Promise<{ masterKeyId: string; count: number }[]> {
    const groups = await this.keys
      .aggregate<{ _id: string; count: number }>([
        { $match: { wrapped: { $type: 'string' }, masterKeyId: { $nin: masterKeyIds } } },
        { $group: { _id: '$masterKeyId', count: { $sum: 1 } } },
        { $sort: { _id: 1 } },
      ])
      .toArray();
    return groups.map((g) => ({ masterKeyId: g._id, count: g.count }));
  }

  async rewrap(guestId: string, wrapped: string, masterKeyId: string): Promise<void> {
    await this.keys.updateOne({ _id: guestId, wrapped: { $type: 'string' } }, { $set: { wrapped, masterKeyId } });
  }

  async purgeDeleted(): Promise<void> {
    // The server owns its files; a deleted field is gone from the document at once.
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.client.close();
  }
}

const fromDoc = (doc: KeyDoc): StoredDataKey => ({
  guestId: doc._id,
  createdAt: doc.createdAt,
  ...(typeof doc.wrapped === 'string' ? { wrapped: doc.wrapped } : {}),
  ...(typeof doc.masterKeyId === 'string' ? { masterKeyId: doc.masterKeyId } : {}),
  ...(doc.erasedAt ? { erasedAt: doc.erasedAt } : {}),
});
