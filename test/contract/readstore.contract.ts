/**
 * The read-store contract: every ReadStore adapter passes these tests.
 * Each test writes to collections of its own (random names), so stores may share a database.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidCursorError } from '../../src/adapters/readstore/cursor.js';
import { DuplicateKeyError, type Doc, type Filter, type ReadStore, type Sort, type WriteOp } from '../../src/adapters/readstore/port.js';

export interface ReadStoreContractOptions {
  /** applyBatch runs in one transaction: a failing op leaves nothing of the batch applied. */
  atomicBatches: boolean;
  /**
   * A unique index counts a missing field as null, so two documents without it collide
   * (MongoDB, embedded; the default). FerretDB 1.x leaves such documents out of the index.
   */
  uniqueIndexesTreatMissingAsNull?: boolean;
}

type Guest = Doc & {
  eventId?: string;
  firstName?: string;
  lastName?: string;
  email?: string;
  tags?: string[];
  additionalInfo?: string;
  address?: { city: string; zip?: string };
  registeredAt?: string;
  plusOnes?: number;
  admitted?: boolean;
};

const guests: Guest[] = [
  { _id: 'g1', eventId: 'e1', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', tags: ['vip', 'speaker'], additionalInfo: 'Needs a Vegan meal', address: { city: 'London', zip: 'N1' }, registeredAt: '2026-01-05T10:00:00.000Z', plusOnes: 1, admitted: true },
  { _id: 'g2', eventId: 'e1', firstName: 'Alan', lastName: 'Turing', email: 'alan@example.com', tags: ['speaker'], additionalInfo: 'vegetarian', address: { city: 'Manchester' }, registeredAt: '2026-01-06T10:00:00.000Z', plusOnes: 0, admitted: false },
  { _id: 'g3', eventId: 'e1', firstName: 'Grace', lastName: 'Hopper', email: 'grace@example.com', tags: [], additionalInfo: 'VEGAN, no nuts', address: { city: 'New York' }, registeredAt: '2026-01-07T09:30:00.000Z', plusOnes: 2, admitted: false },
  { _id: 'g4', eventId: 'e2', firstName: 'Edsger', lastName: 'Dijkstra', email: 'edsger@example.com', tags: ['vip'], address: { city: 'Amsterdam' }, registeredAt: '2026-02-01T00:00:00.000Z', plusOnes: 0, admitted: true },
  { _id: 'g5', eventId: 'e2', firstName: 'Barbara', lastName: 'Liskov', email: 'barbara@example.com', tags: ['speaker', 'vip'], additionalInfo: 'arrives late', address: { city: 'Boston' }, registeredAt: '2026-02-02T00:00:00.000Z', plusOnes: 3, admitted: false },
];

const ids = (docs: Doc[]) => docs.map((d) => d._id);

export function readStoreContract(
  name: string,
  makeStore: () => Promise<ReadStore>,
  options: ReadStoreContractOptions = { atomicBatches: false },
): void {
  describe(`read store contract: ${name}`, () => {
    let store: ReadStore;
    const fresh = (label: string) => `${label}_${randomUUID().replaceAll('-', '').slice(0, 10)}`;

    beforeEach(async () => {
      store = await makeStore();
    });
    afterEach(async () => {
      await store.close();
    });

    async function seeded(label = 'guests') {
      const collection = store.collection<Guest>(fresh(label));
      await store.applyBatch(guests.map(({ _id, ...doc }) => ({ kind: 'replace', collection: collection.name, id: _id, doc })));
      return collection;
    }

    async function allPages(collection: ReturnType<ReadStore['collection']>, filter: Filter, sort: Sort, limit: number) {
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await collection.find(filter, { sort, limit, cursor });
        pages.push(ids(page.items));
        cursor = page.nextCursor;
        expect(pages.length).toBeLessThan(100);
      } while (cursor);
      return pages;
    }

    describe('queries', () => {
      it('get returns the document by id, and null for an unknown id', async () => {
        const collection = await seeded();
        expect(await collection.get('g2')).toEqual(guests[1]);
        expect(await collection.get('nope')).toBeNull();
      });

      it('findOne returns a match or null', async () => {
        const collection = await seeded();
        expect((await collection.findOne({ email: 'grace@example.com' }))?._id).toBe('g3');
        expect(await collection.findOne({ email: 'nobody@example.com' })).toBeNull();
      });

      it('find understands $in, case-insensitive $regex, $or, nested fields and ranges on ISO strings', async () => {
        const collection = await seeded();
        const find = async (filter: Filter) => ids((await collection.find(filter)).items).sort();
        expect(await find({ eventId: 'e1' })).toEqual(['g1', 'g2', 'g3']);
        expect(await find({ _id: { $in: ['g1', 'g4', 'nope'] } })).toEqual(['g1', 'g4']);
        expect(await find({ tags: 'vip' })).toEqual(['g1', 'g4', 'g5']);
        expect(await find({ tags: { $in: ['speaker'] }, eventId: 'e2' })).toEqual(['g5']);
        expect(await find({ eventId: 'e1', additionalInfo: { $regex: 'vegan', $options: 'i' } })).toEqual(['g1', 'g3']);
        expect(await find({ $or: [{ firstName: 'Ada' }, { 'address.city': 'Boston' }] })).toEqual(['g1', 'g5']);
        expect(await find({ 'address.city': { $in: ['London', 'Amsterdam'] } })).toEqual(['g1', 'g4']);
        expect(await find({ registeredAt: { $gte: '2026-01-06T00:00:00.000Z', $lt: '2026-02-01T00:00:00.000Z' } })).toEqual(['g2', 'g3']);
        expect(await find({ plusOnes: { $gt: 0 }, admitted: false })).toEqual(['g3', 'g5']);
        expect(await find({ additionalInfo: { $exists: false } })).toEqual(['g4']);
        expect(await find({ $and: [{ eventId: 'e2' }, { admitted: true }] })).toEqual(['g4']);
      });

      it('find sorts by several keys, each ascending or descending', async () => {
        const collection = await seeded();
        expect(ids((await collection.find({}, { sort: { eventId: -1, lastName: 1 } })).items)).toEqual(['g4', 'g5', 'g3', 'g1', 'g2']);
        expect(ids((await collection.find({}, { sort: { plusOnes: -1 } })).items)).toEqual(['g5', 'g3', 'g1', 'g2', 'g4']);
      });

      it('find returns only the projected fields and _id', async () => {
        const collection = await seeded();
        const page = await collection.find({ eventId: 'e1' }, { sort: { lastName: 1 }, projection: { firstName: 1, 'address.city': 1 } });
        expect(page.items).toEqual([
          { _id: 'g3', firstName: 'Grace', address: { city: 'New York' } },
          { _id: 'g1', firstName: 'Ada', address: { city: 'London' } },
          { _id: 'g2', firstName: 'Alan', address: { city: 'Manchester' } },
        ]);
      });

      it('count counts all documents or the matches of a filter', async () => {
        const collection = await seeded();
        expect(await collection.count()).toBe(5);
        expect(await collection.count({ tags: 'vip', admitted: true })).toBe(2);
        expect(await store.collection(fresh('empty')).count({})).toBe(0);
      });

      it('stream yields every match in sort order', async () => {
        const collection = await seeded();
        const seen: string[] = [];
        for await (const doc of collection.stream({ plusOnes: { $gte: 0 } }, { sort: { lastName: -1 }, batchSize: 2 })) seen.push(doc._id);
        expect(seen).toEqual(['g2', 'g1', 'g5', 'g3', 'g4']);
      });

      it('batches yields the same matches in the same order, in arrays of at most batchSize', async () => {
        const collection = await seeded();
        const batches: string[][] = [];
        for await (const batch of collection.batches({ plusOnes: { $gte: 0 } }, { sort: { lastName: -1 }, batchSize: 2 })) batches.push(batch.map((doc) => doc._id));
        expect(batches).toEqual([['g2', 'g1'], ['g5', 'g3'], ['g4']]);
        const none: unknown[] = [];
        for await (const batch of collection.batches({ lastName: 'Nobody' })) none.push(batch);
        expect(none).toEqual([]);
      });
    });

    describe('cursor paging', () => {
      // 23 documents: last names with ties, some missing or null, scores with ties.
      const names = ['Brown', 'adams', 'Clark', 'Brown', undefined, 'Adams', null, 'Brown', 'Clark'];
      const docs = Array.from({ length: 23 }, (_, i) => {
        const doc: Record<string, unknown> = { score: i % 4 === 0 ? undefined : i % 5, n: i };
        const lastName = names[i % names.length];
        if (lastName !== undefined) doc.lastName = lastName;
        if (doc.score === undefined) delete doc.score;
        return { id: `d${String((i * 7) % 23).padStart(2, '0')}`, doc };
      });

      async function pagingCollection() {
        const collection = store.collection(fresh('paging'));
        await store.applyBatch(docs.map(({ id, doc }) => ({ kind: 'replace', collection: collection.name, id, doc })));
        return collection;
      }

      /** The order MongoDB gives: null and missing first ascending (last descending), ties by _id ascending. */
      function expected(key: 'lastName' | 'score', direction: 1 | -1, filter: (doc: Record<string, unknown>) => boolean = () => true) {
        const rank = (v: unknown) => (v === undefined || v === null ? 0 : 1);
        return docs
          .filter(({ doc }) => filter(doc))
          .sort((a, b) => {
            const x = a.doc[key];
            const y = b.doc[key];
            const byValue = rank(x) - rank(y) || (rank(x) === 0 ? 0 : x! < y! ? -1 : x! > y! ? 1 : 0);
            return byValue * direction || (a.id < b.id ? -1 : 1);
          })
          .map(({ id }) => id);
      }

      it('pages ascending over ties and missing values lose and repeat nothing', async () => {
        const collection = await pagingCollection();
        const pages = await allPages(collection, {}, { lastName: 1 }, 5);
        expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 3]);
        expect(pages.flat()).toEqual(expected('lastName', 1));
      });

      it('pages descending put missing and null values last, and still lose nothing', async () => {
        const collection = await pagingCollection();
        const pages = await allPages(collection, {}, { score: -1 }, 4);
        expect(pages.length).toBeGreaterThanOrEqual(3);
        expect(pages.flat()).toEqual(expected('score', -1));
      });

      it('pages over two sort keys with a filter', async () => {
        const collection = await pagingCollection();
        const pages = await allPages(collection, { n: { $gte: 3 } }, { lastName: -1, score: 1 }, 6);
        const want = docs
          .filter(({ doc }) => (doc.n as number) >= 3)
          .map(({ id, doc }) => ({ id, l: (doc.lastName ?? null) as string | null, s: (doc.score ?? null) as number | null }))
          .sort((a, b) => {
            const l = a.l === b.l ? 0 : a.l === null ? 1 : b.l === null ? -1 : a.l < b.l ? 1 : -1;
            const s = a.s === b.s ? 0 : a.s === null ? -1 : b.s === null ? 1 : a.s - b.s;
            return l || s || (a.id < b.id ? -1 : 1);
          })
          .map(({ id }) => id);
        expect(pages.length).toBeGreaterThanOrEqual(3);
        expect(pages.flat()).toEqual(want);
      });

      it('the last page has no next cursor', async () => {
        const collection = await pagingCollection();
        const page = await collection.find({}, { limit: 23 });
        expect(page.items).toHaveLength(23);
        expect(page.nextCursor).toBeUndefined();
      });

      it('a cursor made for another sort is rejected', async () => {
        const collection = await pagingCollection();
        const { nextCursor } = await collection.find({}, { sort: { lastName: 1 }, limit: 2 });
        await expect(collection.find({}, { sort: { score: 1 }, cursor: nextCursor })).rejects.toThrow(InvalidCursorError);
        await expect(collection.find({}, { cursor: 'garbage' })).rejects.toThrow(InvalidCursorError);
      });

      it('a cursor made for another filter is rejected; the same filter in another key order takes it', async () => {
        const collection = await pagingCollection();
        const filter = { n: { $gte: 3, $lt: 20 }, lastName: 'Brown' };
        const { nextCursor } = await collection.find(filter, { sort: { score: 1 }, limit: 1 });
        expect(nextCursor).toEqual(expect.any(String));
        await expect(collection.find({ n: { $gte: 4, $lt: 20 }, lastName: 'Brown' }, { sort: { score: 1 }, cursor: nextCursor })).rejects.toThrow(InvalidCursorError);
        await expect(collection.find({}, { sort: { score: 1 }, cursor: nextCursor })).rejects.toThrow(InvalidCursorError);
        const same = await collection.find({ lastName: 'Brown', n: { $lt: 20, $gte: 3 } }, { sort: { score: 1 }, cursor: nextCursor });
        expect(same.items.length).toBeGreaterThan(0);
      });

      it('limit defaults to 100 and is capped at 1000', async () => {
        const collection = store.collection(fresh('many'));
        const ops: WriteOp[] = Array.from({ length: 1005 }, (_, i) => ({ kind: 'replace', collection: collection.name, id: `m${i}`, doc: { i } }));
        await store.applyBatch(ops);
        expect((await collection.find({})).items).toHaveLength(100);
        const capped = await collection.find({}, { limit: 5000 });
        expect(capped.items).toHaveLength(1000);
        expect(capped.nextCursor).toBeDefined();
        expect((await collection.find({}, { limit: 5000, cursor: capped.nextCursor })).items).toHaveLength(5);
      });
    });

    describe('order and matching as MongoDB gives them', () => {
      // MongoDB compares strings by UTF-8 bytes (code points); JavaScript's < by UTF-16 code units,
      // which puts U+10000 and above (emoji, CJK extension B) before U+E000-U+FFFF.
      const names = ['a', 'Z', '\uFF21', '\u{1F600}', '\uE000', '\u{20000}', '\u00E9', '\uFFFD', '\u{1F600}x'];
      const byCodePoint = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

      async function named() {
        const collection = store.collection(fresh('codepoints'));
        await collection.createIndex({ name: 'by_group_name', keys: { group: 1, name: 1 } });
        await store.applyBatch(
          names.map((name, i) => ({ kind: 'replace', collection: collection.name, id: `n${i}`, doc: { group: 'g', name, nested: { name } } })),
        );
        return collection;
      }
      const idsOf = (wanted: string[]) => wanted.map((name) => `n${names.indexOf(name)}`);

      it('sorts and pages strings by code point, ascending and descending, with and without an index on the sort', async () => {
        const collection = await named();
        const ascending = idsOf([...names].sort(byCodePoint));
        expect(ids((await collection.find({}, { sort: { name: 1 } })).items)).toEqual(ascending);
        expect((await allPages(collection, {}, { name: 1 }, 2)).flat()).toEqual(ascending);
        expect((await allPages(collection, { group: 'g' }, { name: 1 }, 2)).flat()).toEqual(ascending);
        expect((await allPages(collection, {}, { name: -1 }, 2)).flat()).toEqual([...ascending].reverse());
        expect((await allPages(collection, {}, { 'nested.name': -1 }, 3)).flat()).toEqual([...ascending].reverse());
        const streamed: string[] = [];
        for await (const doc of collection.stream({}, { sort: { name: 1 }, batchSize: 2 })) streamed.push(doc._id);
        expect(streamed).toEqual(ascending);
      });

      it('compares strings by code point in $gt, $gte, $lt and $lte, on top-level and nested fields', async () => {
        const collection = await named();
        const find = async (filter: Filter) => ids((await collection.find(filter, { sort: { name: 1 } })).items);
        const where = (test: (name: string) => boolean) => idsOf(names.filter(test).sort(byCodePoint));
        expect(await find({ name: { $gt: '\uFF21' } })).toEqual(where((n) => byCodePoint(n, '\uFF21') > 0));
        expect(await find({ name: { $gte: '\uE000', $lt: '\u{1F600}' } })).toEqual(where((n) => byCodePoint(n, '\uE000') >= 0 && byCodePoint(n, '\u{1F600}') < 0));
        expect(await find({ 'nested.name': { $lte: '\uFFFD' } })).toEqual(where((n) => byCodePoint(n, '\uFFFD') <= 0));
        expect(await find({ 'nested.name': { $gt: '\uFFFD' } })).toEqual(where((n) => byCodePoint(n, '\uFFFD') > 0));
      });
    });

    describe('mixed types, null and missing, numbers', () => {
      // MongoDB's comparison order of types (docs: Comparison/Sort Order): null and missing, numbers, strings, objects, booleans.
      const mixed: Array<[id: string, value: unknown]> = [
        ['m01', 2],
        ['m02', 'b'],
        ['m03', null],
        ['m04', undefined],
        ['m05', true],
        ['m06', 1.5],
        ['m07', 'A'],
        ['m08', { k: 1 }],
        ['m09', false],
        ['m10', -3],
        ['m11', ''],
        ['m12', null],
      ];
      const ascending = ['m03', 'm04', 'm12', 'm10', 'm06', 'm01', 'm11', 'm07', 'm02', 'm08', 'm09', 'm05'];
      const descending = ['m05', 'm09', 'm08', 'm02', 'm07', 'm11', 'm01', 'm06', 'm10', 'm03', 'm04', 'm12'];

      async function mixedCollection() {
        const collection = store.collection(fresh('mixed'));
        await store.applyBatch(
          mixed.map(([id, v]) => ({ kind: 'replace', collection: collection.name, id, doc: v === undefined ? { nested: {} } : { v, nested: { v } } })),
        );
        return collection;
      }

      it('sorts values of different types in MongoDB\'s type order, null and missing together first', async () => {
        const collection = await mixedCollection();
        expect(ids((await collection.find({}, { sort: { v: 1 } })).items)).toEqual(ascending);
        expect(ids((await collection.find({}, { sort: { v: -1 } })).items)).toEqual(descending);
        expect(ids((await collection.find({}, { sort: { 'nested.v': 1 } })).items)).toEqual(ascending);
      });

      it('matches null and missing alike: equality, $in, $ne, $nin, and $gte/$lte null; $exists tells them apart', async () => {
        const collection = await mixedCollection();
        for (const path of ['v', 'nested.v']) {
          const find = async (condition: unknown) => ids((await collection.find({ [path]: condition })).items);
          expect(await find(null)).toEqual(['m03', 'm04', 'm12']);
          expect(await find({ $eq: null })).toEqual(['m03', 'm04', 'm12']);
          expect(await find({ $in: [null] })).toEqual(['m03', 'm04', 'm12']);
          expect(await find({ $in: [null, 2, 'A'] })).toEqual(['m01', 'm03', 'm04', 'm07', 'm12']);
          expect(await find({ $ne: null })).toEqual(['m01', 'm02', 'm05', 'm06', 'm07', 'm08', 'm09', 'm10', 'm11']);
          expect(await find({ $nin: [null, false] })).toEqual(['m01', 'm02', 'm05', 'm06', 'm07', 'm08', 'm10', 'm11']);
          expect(await find({ $gte: null })).toEqual(['m03', 'm04', 'm12']);
          expect(await find({ $lte: null })).toEqual(['m03', 'm04', 'm12']);
          expect(await find({ $gt: null })).toEqual([]);
          expect(await find({ $exists: false })).toEqual(['m04']);
          expect(await find({ $exists: true, $eq: null })).toEqual(['m03', 'm12']);
        }
      });

      it('compares a range only with values of its own type', async () => {
        const collection = await mixedCollection();
        const find = async (filter: Filter) => ids((await collection.find(filter)).items);
        expect(await find({ v: { $gt: 0 } })).toEqual(['m01', 'm06']);
        expect(await find({ v: { $lt: 'a' } })).toEqual(['m07', 'm11']);
        expect(await find({ v: { $gte: false } })).toEqual(['m05', 'm09']);
        expect(await find({ 'nested.v': { $gt: 0 } })).toEqual(['m01', 'm06']);
        expect(await find({ 'nested.v': { $lt: 'a' } })).toEqual(['m07', 'm11']);
      });

      it('pages over values of different types in the same order, with nothing twice and nothing lost', async () => {
        const collection = await mixedCollection();
        expect((await allPages(collection, {}, { v: 1 }, 2)).flat()).toEqual(ascending);
        expect((await allPages(collection, {}, { v: -1 }, 2)).flat()).toEqual(descending);
      });

      it('sorts objects field by field: each field\'s type first, then its name, then its value', async () => {
        const collection = store.collection(fresh('objects'));
        const objects: Array<[string, object]> = [
          ['o1', { a: 'x' }],
          ['o2', { b: 1 }],
          ['o3', { a: 1, b: 2 }],
          ['o4', { a: 1 }],
          ['o5', { b: 'a' }],
          ['o6', {}],
          ['o7', { a: null }],
          ['o8', { a: [1] }],
          ['o9', { a: { z: 1 } }],
        ];
        await store.applyBatch(objects.map(([id, v]) => ({ kind: 'replace', collection: collection.name, id, doc: { v } })));
        const ascending = ['o6', 'o7', 'o4', 'o3', 'o2', 'o1', 'o5', 'o9', 'o8'];
        expect(ids((await collection.find({}, { sort: { v: 1 } })).items)).toEqual(ascending);
        expect((await allPages(collection, {}, { v: -1 }, 2)).flat()).toEqual([...ascending].reverse());
      });

      it('$max and $min compare an empty array as an array (after null, numbers, strings and objects); only a sort puts it first', async () => {
        const collection = store.collection(fresh('maxmin'));
        await collection.replaceOne('x', { hi: null, lo: 'a', obj: { k: 1 } } as never);
        await collection.updateOne('x', { $max: { hi: [], obj: [] }, $min: { lo: [] } });
        expect(await collection.get('x')).toEqual({ _id: 'x', hi: [], lo: 'a', obj: [] });
      });

      it('an integer and a fractional number that are equal are one value: in equality, $in, ranges and sorts', async () => {
        const collection = store.collection(fresh('numbers'));
        // On MongoDB the driver stores 1 as an int32 and 2 ** 40 as a double; $inc of 0.5 twice makes a double 1.
        await collection.replaceOne('int', { n: 1, m: 2 ** 40 } as never);
        await collection.updateOne('double', { $inc: { n: 0.5 }, $set: { m: 1099511627776.0 } }, { upsert: true });
        await collection.updateOne('double', { $inc: { n: 0.5 } });
        await collection.replaceOne('other', { n: 1.25, m: 2 ** 40 + 1 } as never);
        const find = async (filter: Filter) => ids((await collection.find(filter)).items);
        expect(await find({ n: 1 })).toEqual(['double', 'int']);
        expect(await find({ n: 1.0, m: 1099511627776 })).toEqual(['double', 'int']);
        expect(await find({ n: { $in: [1, 7] } })).toEqual(['double', 'int']);
        expect(await find({ n: { $gte: 1, $lt: 1.25 } })).toEqual(['double', 'int']);
        expect(await find({ n: { $ne: 1 } })).toEqual(['other']);
        expect(ids((await collection.find({}, { sort: { n: -1 } })).items)).toEqual(['other', 'double', 'int']);
        expect((await allPages(collection, {}, { n: 1 }, 1)).flat()).toEqual(['double', 'int', 'other']);
      });
    });

    describe('sorting on an array field', () => {
      // MongoDB sorts a document by the smallest element of an array ascending, by the largest
      // descending, and an empty array before null and missing (docs: Comparison/Sort Order).
      const tagged: Array<[id: string, tags: unknown]> = [
        ['t01', ['vip', 'speaker']],
        ['t02', ['speaker']],
        ['t03', []],
        ['t04', undefined],
        ['t05', null],
        ['t06', ['b', 'z']],
        ['t07', 'c'],
        ['t08', ['c', 'a']],
        ['t09', ['m']],
        ['t10', []],
        ['t11', ['a', 'zz']],
        ['t12', 'speaker'],
        ['t13', [null, 'q']],
        ['t14', [null]],
      ];
      const rank = (tags: unknown, direction: 1 | -1): [number, string] => {
        if (Array.isArray(tags) && tags.length === 0) return [0, ''];
        const values = (Array.isArray(tags) ? tags : [tags]) as Array<string | null | undefined>;
        // Null (and missing) is the smallest value: it is the smallest element, and the largest only alone.
        const strings = values.filter((v): v is string => typeof v === 'string');
        if (strings.length === 0 || (direction === 1 && strings.length < values.length)) return [1, ''];
        return [2, strings.reduce((best, v) => ((v < best ? -1 : 1) * direction < 0 ? v : best))];
      };
      const order = (direction: 1 | -1) =>
        [...tagged]
          .sort(([a, x], [b, y]) => {
            const [rx, vx] = rank(x, direction);
            const [ry, vy] = rank(y, direction);
            return ((rx - ry) || (vx < vy ? -1 : vx > vy ? 1 : 0)) * direction || (a < b ? -1 : 1);
          })
          .map(([id]) => id);

      async function taggedCollection() {
        const collection = store.collection(fresh('tagged'));
        await store.applyBatch(
          tagged.map(([id, tags]) => ({ kind: 'replace', collection: collection.name, id, doc: tags === undefined ? { n: 1 } : { tags, n: 1 } })),
        );
        return collection;
      }

      it('sorts by the smallest element ascending and the largest descending, an empty array first ascending', async () => {
        const collection = await taggedCollection();
        expect(ids((await collection.find({}, { sort: { tags: 1 } })).items)).toEqual(order(1));
        expect(ids((await collection.find({}, { sort: { tags: -1 } })).items)).toEqual(order(-1));
      });

      it('pages over an array sort key in the same order, with nothing twice and nothing lost', async () => {
        const collection = await taggedCollection();
        for (const limit of [1, 2, 5]) {
          expect((await allPages(collection, {}, { tags: 1 }, limit)).flat()).toEqual(order(1));
          expect((await allPages(collection, { n: 1 }, { tags: -1 }, limit)).flat()).toEqual(order(-1));
        }
        const streamed: string[] = [];
        for await (const doc of collection.stream({}, { sort: { tags: 1 }, batchSize: 2 })) streamed.push(doc._id);
        expect(streamed).toEqual(order(1));
      });
    });

    describe('writes', () => {
      it('updateOne applies $set, $unset, $inc, $push, $addToSet, $pull, $max and $min', async () => {
        const collection = await seeded();
        await collection.updateOne('g1', { $set: { 'address.city': 'Paris', firstName: 'Augusta' }, $unset: { email: '' }, $inc: { plusOnes: 2 } });
        await collection.updateOne('g1', { $push: { tags: 'guest' }, $max: { plusOnes: 10 } });
        await collection.updateOne('g1', { $addToSet: { tags: 'vip' }, $min: { registeredAt: '2025-12-31T00:00:00.000Z' } });
        await collection.updateOne('g1', { $pull: { tags: 'speaker' }, $max: { score: 7 } });
        await collection.updateOne('g1', { $addToSet: { tags: 'new' } });
        await collection.updateOne('g1', { $min: { plusOnes: 4 }, $inc: { 'counts.checkins': 1 } });
        const { _id, email, ...unchanged } = guests[0];
        expect(email).toBeDefined();
        expect(await collection.get('g1')).toEqual({
          ...unchanged,
          _id,
          firstName: 'Augusta',
          address: { city: 'Paris', zip: 'N1' },
          plusOnes: 4,
          tags: ['vip', 'guest', 'new'],
          registeredAt: '2025-12-31T00:00:00.000Z',
          score: 7,
          counts: { checkins: 1 },
        });
      });

      it('$push with $each and $slice keeps the array bounded: the latest -n (or the first n), through updateOne and applyBatch, replays included', async () => {
        const name = fresh('bounded');
        const collection = store.collection(name);
        const push = (i: number, slice: number) => ({ $push: { log: { $each: [`e${i}`], $slice: slice } }, $inc: { n: 1 } });
        // An upsert creates the array; pushes past the bound drop the oldest.
        for (let i = 0; i < 5; i++) await collection.updateOne('u', push(i, -3), { upsert: true });
        expect(await collection.get('u')).toEqual({ _id: 'u', log: ['e2', 'e3', 'e4'], n: 5 });
        // 40 pushes to one document in one batch (more than one server command), then the same batch replayed.
        const checkpoint = fresh('cp');
        const ops: WriteOp[] = Array.from({ length: 40 }, (_, i) => ({ kind: 'update', collection: name, id: 'b', update: push(i, -4), upsert: true, position: i + 1 }));
        await store.applyBatch(ops, { name: checkpoint, position: 40 });
        await store.applyBatch(ops, { name: checkpoint, position: 40 });
        expect(await collection.get('b')).toEqual({ _id: 'b', log: ['e36', 'e37', 'e38', 'e39'], n: 40 });
        // A positive $slice keeps the first n.
        for (let i = 0; i < 4; i++) await collection.updateOne('f', push(i, 2), { upsert: true });
        expect((await collection.get('f'))?.log).toEqual(['e0', 'e1']);
      });

      it('updateOne on a missing document creates nothing without upsert', async () => {
        const collection = store.collection(fresh('upd'));
        expect(await collection.updateOne('x', { $set: { a: 1 } })).toBe(false);
        expect(await collection.get('x')).toBeNull();
        expect(await collection.count()).toBe(0);
      });

      it('updateOne with upsert creates the document with $setOnInsert, which later updates leave alone', async () => {
        const collection = store.collection(fresh('upsert'));
        const update = { $setOnInsert: { createdAt: '2026-01-01T00:00:00.000Z', status: 'new' }, $set: { name: 'A' }, $inc: { visits: 1 } };
        expect(await collection.updateOne('u1', update, { upsert: true })).toBe(true);
        expect(await collection.get('u1')).toEqual({ _id: 'u1', createdAt: '2026-01-01T00:00:00.000Z', status: 'new', name: 'A', visits: 1 });
        const later = { ...update, $setOnInsert: { createdAt: '2027-01-01T00:00:00.000Z', status: 'again' }, $set: { name: 'B' } };
        expect(await collection.updateOne('u1', later, { upsert: true })).toBe(true);
        expect(await collection.get('u1')).toEqual({ _id: 'u1', createdAt: '2026-01-01T00:00:00.000Z', status: 'new', name: 'B', visits: 2 });
      });

      it('replaceOne replaces the whole document, and creates it when missing', async () => {
        const collection = await seeded();
        await collection.replaceOne('g1', { firstName: 'Ada', note: 'replaced' } as never);
        expect(await collection.get('g1')).toEqual({ _id: 'g1', firstName: 'Ada', note: 'replaced' });
        await collection.replaceOne('g9', { firstName: 'New' } as never);
        expect(await collection.get('g9')).toEqual({ _id: 'g9', firstName: 'New' });
      });

      it('deleteOne removes the document; deleting a missing one is harmless', async () => {
        const collection = await seeded();
        await collection.deleteOne('g2');
        await collection.deleteOne('g2');
        expect(await collection.get('g2')).toBeNull();
        expect(await collection.count()).toBe(4);
      });
    });

    describe('unique indexes', () => {
      it('reject a duplicate with DuplicateKeyError and keep the existing documents', async () => {
        const collection = await seeded();
        await collection.createIndex({ name: 'email_unique', keys: { email: 1 }, unique: true });
        const error = await collection.updateOne('g2', { $set: { email: 'ada@example.com', firstName: 'X' } }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(DuplicateKeyError);
        expect(error).toMatchObject({ collection: collection.name, index: 'email_unique' });
        await expect(collection.replaceOne('g9', { email: 'grace@example.com' } as never)).rejects.toThrow(DuplicateKeyError);
        await expect(collection.updateOne('g9', { $set: { email: 'ada@example.com' } }, { upsert: true })).rejects.toThrow(DuplicateKeyError);
        expect(await collection.get('g2')).toEqual(guests[1]);
        expect(await collection.get('g9')).toBeNull();
        await collection.updateOne('g2', { $set: { email: 'alan.turing@example.com' } });
        expect((await collection.get('g2'))?.email).toBe('alan.turing@example.com');
      });

      it('compound unique keys reject only the same combination', async () => {
        const collection = await seeded();
        await collection.createIndex({ name: 'event_email', keys: { eventId: 1, email: 1 }, unique: true });
        await collection.replaceOne('g6', { eventId: 'e2', email: 'ada@example.com' } as never);
        await expect(collection.replaceOne('g7', { eventId: 'e1', email: 'ada@example.com' } as never)).rejects.toThrow(DuplicateKeyError);
        expect(await collection.count({ email: 'ada@example.com' })).toBe(2);
      });

      const missingIsNull = options.uniqueIndexesTreatMissingAsNull ?? true;
      it('treat a missing field as null: two documents without it collide', async ({ skip }) => {
        skip(!missingIsNull, `${name} (FerretDB 1.x) leaves documents without the field out of a unique index; the next test covers it`);
        const collection = store.collection(fresh('missing'));
        await collection.createIndex({ name: 'code_unique', keys: { code: 1 }, unique: true });
        await collection.replaceOne('a', { name: 'first' } as never);
        await expect(collection.replaceOne('b', { name: 'second' } as never)).rejects.toThrow(DuplicateKeyError);
        await expect(collection.replaceOne('c', { code: null } as never)).rejects.toThrow(DuplicateKeyError);
      });

      it('leave out documents without the field, but still reject a second null', async ({ skip }) => {
        skip(missingIsNull, `${name} counts a missing field as null; the previous test covers it`);
        const collection = store.collection(fresh('missing'));
        await collection.createIndex({ name: 'code_unique', keys: { code: 1 }, unique: true });
        await collection.replaceOne('a', { name: 'first' } as never);
        await collection.replaceOne('b', { name: 'second' } as never);
        await collection.replaceOne('c', { code: null } as never);
        await expect(collection.replaceOne('d', { code: null } as never)).rejects.toThrow(DuplicateKeyError);
      });

      it('cannot be created over existing duplicates', async () => {
        const collection = await seeded();
        await expect(collection.createIndex({ name: 'event_unique', keys: { eventId: 1 }, unique: true })).rejects.toThrow(DuplicateKeyError);
        await collection.replaceOne('g9', { eventId: 'e1' } as never);
        expect(await collection.count({ eventId: 'e1' })).toBe(4);
      });

      it('creating the same index again is a no-op', async () => {
        const collection = await seeded();
        await collection.createIndex({ name: 'by_event', keys: { eventId: 1, lastName: 1 } });
        await collection.createIndex({ name: 'by_event', keys: { eventId: 1, lastName: 1 } });
        expect(ids((await collection.find({ eventId: 'e2' }, { sort: { lastName: 1 } })).items)).toEqual(['g4', 'g5']);
      });
    });

    describe('applyBatch and checkpoints', () => {
      it('applies ops in order across collections and moves the checkpoint', async () => {
        const guestsName = fresh('bguests');
        const statsName = fresh('bstats');
        const checkpoint = fresh('cp');
        await store.applyBatch(
          [
            { kind: 'update', collection: guestsName, id: 'a', update: { $set: { name: 'A' } }, upsert: true, position: 1 },
            { kind: 'update', collection: statsName, id: 'e1', update: { $inc: { guests: 1 } }, upsert: true, position: 1 },
            { kind: 'update', collection: guestsName, id: 'b', update: { $set: { name: 'B' } }, upsert: true, position: 2 },
            { kind: 'update', collection: statsName, id: 'e1', update: { $inc: { guests: 1 } }, upsert: true, position: 2 },
            { kind: 'update', collection: guestsName, id: 'a', update: { $set: { name: 'A2' } }, position: 3 },
            { kind: 'delete', collection: guestsName, id: 'b', position: 3 },
          ],
          { name: checkpoint, position: 3 },
        );
        expect(await store.collection(guestsName).find({})).toEqual({ items: [{ _id: 'a', name: 'A2' }] });
        expect(await store.collection(statsName).get('e1')).toEqual({ _id: 'e1', guests: 2 });
        expect(await store.getCheckpoint(checkpoint)).toBe(3);
      });

      it('a replayed batch applies nothing twice, even several ops of one position on one document', async () => {
        const name = fresh('replay');
        const checkpoint = fresh('cp');
        const first: WriteOp[] = [
          { kind: 'update', collection: name, id: 'e1', update: { $inc: { guests: 1 }, $setOnInsert: { since: 1 } }, upsert: true, position: 10 },
          { kind: 'update', collection: name, id: 'e1', update: { $inc: { admitted: 1 }, $push: { log: 'p10' } }, upsert: true, position: 10 },
          { kind: 'update', collection: name, id: 'e1', update: { $inc: { guests: 1 }, $push: { log: 'p11' } }, upsert: true, position: 11 },
          { kind: 'replace', collection: name, id: 'e2', doc: { guests: 5 }, position: 11 },
          { kind: 'update', collection: name, id: 'e2', update: { $inc: { guests: 1 } }, position: 12 },
          { kind: 'update', collection: name, id: 'gone', update: { $set: { x: 1 } }, upsert: true, position: 12 },
          { kind: 'delete', collection: name, id: 'gone', position: 13 },
        ];
        const second: WriteOp[] = [
          { kind: 'update', collection: name, id: 'e1', update: { $inc: { guests: 1 }, $push: { log: 'p14' } }, upsert: true, position: 14 },
          { kind: 'replace', collection: name, id: 'e2', doc: { guests: 50 }, position: 15 },
        ];
        const expectState = async () => {
          const collection = store.collection(name);
          expect(await collection.get('e1')).toEqual({ _id: 'e1', since: 1, guests: 3, admitted: 1, log: ['p10', 'p11', 'p14'] });
          expect(await collection.get('e2')).toEqual({ _id: 'e2', guests: 50 });
          expect(await collection.get('gone')).toBeNull();
          expect(ids((await collection.find({}, { sort: { guests: 1 } })).items)).toEqual(['e1', 'e2']);
          expect((await collection.findOne({ _id: 'e1' }))?.guests).toBe(3);
        };
        await store.applyBatch(first, { name: checkpoint, position: 13 });
        await store.applyBatch(second, { name: checkpoint, position: 15 });
        await expectState();
        // A crash before the checkpoint: the runner hands both batches again.
        await store.applyBatch(first, { name: checkpoint, position: 13 });
        await store.applyBatch(second, { name: checkpoint, position: 15 });
        await expectState();
        expect(await store.getCheckpoint(checkpoint)).toBe(15);
      });

      it('a large batch of updates to existing documents applies every one', async () => {
        const name = fresh('large');
        const seed: WriteOp[] = Array.from({ length: 150 }, (_, i) => ({ kind: 'replace', collection: name, id: `d${i}`, doc: { n: 0 } }));
        await store.applyBatch(seed);
        const increments: WriteOp[] = [...seed, ...seed].map((op, i) => ({ kind: 'update', collection: name, id: op.id, update: { $inc: { n: 1 } }, position: i }));
        await store.applyBatch(increments, { name: fresh('cp'), position: 299 });
        expect(await store.collection(name).count({ n: 2 })).toBe(150);
      });

      it('a replayed upsert still reports a real duplicate key', async () => {
        const name = fresh('replaydup');
        await store.collection(name).createIndex({ name: 'code_unique', keys: { code: 1 }, unique: true });
        await store.applyBatch([{ kind: 'update', collection: name, id: 'a', update: { $set: { code: 'X' } }, upsert: true, position: 1 }]);
        await expect(
          store.applyBatch([{ kind: 'update', collection: name, id: 'b', update: { $set: { code: 'X' } }, upsert: true, position: 2 }]),
        ).rejects.toThrow(DuplicateKeyError);
      });

      it('a failing op rolls back the whole batch and leaves the checkpoint unchanged', async ({ skip }) => {
        skip(!options.atomicBatches, `${name} has no multi-document transactions (DESIGN.md section 7); its crash-replay test covers batches`);
        const collection = await seeded();
        await collection.createIndex({ name: 'email_unique', keys: { email: 1 }, unique: true });
        const checkpoint = fresh('cp');
        await store.setCheckpoint(checkpoint, 7);
        const batch: WriteOp[] = [
          { kind: 'update', collection: collection.name, id: 'g1', update: { $set: { firstName: 'Changed' } }, position: 8 },
          { kind: 'delete', collection: collection.name, id: 'g3', position: 8 },
          { kind: 'replace', collection: collection.name, id: 'g9', doc: { email: 'new@example.com' }, position: 9 },
          { kind: 'update', collection: collection.name, id: 'g2', update: { $set: { email: 'ada@example.com' } }, position: 9 },
          { kind: 'update', collection: collection.name, id: 'g4', update: { $set: { firstName: 'Never' } }, position: 10 },
        ];
        await expect(store.applyBatch(batch, { name: checkpoint, position: 10 })).rejects.toThrow(DuplicateKeyError);
        expect(await store.getCheckpoint(checkpoint)).toBe(7);
        expect(await collection.count()).toBe(5);
        for (const guest of guests) expect(await collection.get(guest._id)).toEqual(guest);
        expect(await collection.findOne({ email: 'new@example.com' })).toBeNull();
        // The unique index still holds the original emails, and frees none it never took.
        await expect(collection.replaceOne('g8', { email: 'grace@example.com' } as never)).rejects.toThrow(DuplicateKeyError);
        await collection.replaceOne('g8', { email: 'new@example.com' } as never);
      });

      it('checkpoints read null until set, and can be cleared', async () => {
        const checkpoint = fresh('cp');
        expect(await store.getCheckpoint(checkpoint)).toBeNull();
        await store.setCheckpoint(checkpoint, 42);
        expect(await store.getCheckpoint(checkpoint)).toBe(42);
        await store.setCheckpoint(checkpoint, 2 ** 40);
        expect(await store.getCheckpoint(checkpoint)).toBe(2 ** 40);
        await store.setCheckpoint(checkpoint, null);
        expect(await store.getCheckpoint(checkpoint)).toBeNull();
      });
    });

    describe('dropCollection', () => {
      it('removes the documents and the indexes', async () => {
        const collection = await seeded();
        await collection.createIndex({ name: 'email_unique', keys: { email: 1 }, unique: true });
        await store.dropCollection(collection.name);
        expect(await collection.count()).toBe(0);
        expect(await collection.get('g1')).toBeNull();
        await collection.replaceOne('a', { email: 'same@example.com' } as never);
        await collection.replaceOne('b', { email: 'same@example.com' } as never);
        expect(await collection.count({ email: 'same@example.com' })).toBe(2);
      });

      it('of a collection that does not exist is harmless', async () => {
        await store.dropCollection(fresh('never'));
      });
    });

    describe('swap (compare and swap of one document, for leases)', () => {
      it('creates only where there is none, replaces or deletes only what matches, and answers what is stored', async () => {
        const leases = store.collection<Doc & { pid: number; beat: string }>(fresh('leases'));
        expect(await leases.swap('lease', null, { pid: 1, beat: 'a' })).toEqual({ swapped: true, current: { _id: 'lease', pid: 1, beat: 'a' } });
        // Another creator finds it taken and is told by whom.
        expect(await leases.swap('lease', null, { pid: 2, beat: 'a' })).toEqual({ swapped: false, current: { _id: 'lease', pid: 1, beat: 'a' } });
        // A replace expecting an older beat changes nothing.
        expect(await leases.swap('lease', { pid: 1, beat: 'old' }, { pid: 2, beat: 'b' })).toEqual({ swapped: false, current: { _id: 'lease', pid: 1, beat: 'a' } });
        expect(await leases.swap('lease', { pid: 1, beat: 'a' }, { pid: 1, beat: 'b' })).toEqual({ swapped: true, current: { _id: 'lease', pid: 1, beat: 'b' } });
        expect(await leases.swap('lease', { pid: 2 }, null)).toEqual({ swapped: false, current: { _id: 'lease', pid: 1, beat: 'b' } });
        expect(await leases.swap('lease', { pid: 1, beat: 'b' }, null)).toEqual({ swapped: true, current: null });
        expect(await leases.get('lease')).toBeNull();
        expect(await leases.swap('lease', { pid: 1 }, { pid: 3, beat: 'c' })).toEqual({ swapped: false, current: null });
      });

      it('lets exactly one of many concurrent creators win', async () => {
        const leases = store.collection<Doc & { pid: number }>(fresh('leases'));
        const answers = await Promise.all(Array.from({ length: 8 }, (_, pid) => leases.swap('lease', null, { pid })));
        const winners = answers.filter((a) => a.swapped);
        expect(winners).toHaveLength(1);
        for (const answer of answers) expect(answer.current).toEqual(winners[0]!.current);
      });
    });

    it('ping answers', async () => {
      await store.ping();
    });
  });
}
