/**
 * `$regex` on a caller's text, as the MongoDB read store sends it: MongoDB refuses a pattern
 * holding a NUL character (BadValue "Regular expression cannot contain an embedded null byte"),
 * and a search for a literal text (guest-queries' `literal`: metacharacters escaped) can hold one.
 * The store sends `\x00` instead, the same character to PCRE. FerretDB takes either, so the sent
 * filter is checked, and the match is checked on the server when MONGO_URL is set.
 */
import { Collection as DriverCollection, MongoClient } from 'mongodb';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { MongoReadStore, serverFilter } from '../../src/adapters/readstore/mongo.js';

const literal = (text: string) => ({ $regex: text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), $options: 'i' });

describe('MongoDB read store: filters as the server takes them', () => {
  it('writes a NUL in a $regex as \\x00, wherever the $regex sits, and leaves every other filter as it is', () => {
    const filter = { clientId: 'c1', $and: [{ $or: [{ firstName: literal('a\u0000.b') }, { email: { $regex: 'x' } }] }], note: 'keep\u0000me' };
    const sent = serverFilter(filter);
    expect(sent).toEqual({ clientId: 'c1', $and: [{ $or: [{ firstName: { $regex: 'a\\x00\\.b', $options: 'i' } }, { email: { $regex: 'x' } }] }], note: 'keep\u0000me' });
    expect(JSON.stringify(sent.$and)).not.toContain('\\u0000');
    const plain = { clientId: 'c1', $or: [{ a: { $regex: '^x' } }] };
    expect(serverFilter(plain)).toBe(plain);
  });
});

const url = process.env.MONGO_URL;
const dbName = `regex_${Date.now()}_${process.pid}`;

describe.skipIf(!url)('MongoDB read store: a literal search holding a NUL (MONGO_URL; skipped without one)', () => {
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    const client = new MongoClient(url!);
    await client.db(dbName).dropDatabase().catch(() => undefined);
    await client.close();
  });

  it('finds the documents holding the text, through find, findOne, count and stream, and sends no NUL in a pattern', async () => {
    const store = new MongoReadStore({ url: url!, dbName });
    try {
      const guests = store.collection('guests');
      await guests.replaceOne('a', { info: 'Table\u00004 (VIP)' });
      await guests.replaceOne('b', { info: 'Table 4 (vip)' });
      const sent: unknown[] = [];
      const find = DriverCollection.prototype.find;
      vi.spyOn(DriverCollection.prototype, 'find').mockImplementation(function (this: DriverCollection, ...args: unknown[]) {
        sent.push(args[0]);
        return (find as (...a: unknown[]) => ReturnType<DriverCollection['find']>).apply(this, args);
      } as never);
      const filter = { info: literal('table\u00004 (vip)') };
      expect((await guests.find(filter)).items.map((d) => d._id)).toEqual(['a']);
      expect((await guests.findOne(filter))?._id).toBe('a');
      expect(await guests.count(filter)).toBe(1);
      const streamed: string[] = [];
      for await (const doc of guests.stream(filter)) streamed.push(doc._id);
      expect(streamed).toEqual(['a']);
      expect(sent.length).toBeGreaterThan(0);
      for (const f of sent) expect(JSON.stringify(f)).not.toContain('\\u0000');
    } finally {
      await store.close();
    }
  });
});
