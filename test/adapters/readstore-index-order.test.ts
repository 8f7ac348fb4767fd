import { describe, expect, it } from 'vitest';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { Collection, Doc, Filter, Sort } from '../../src/adapters/readstore/port.js';

/** Deterministic pseudo-random numbers. */
function random(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) % 2 ** 32;
    return seed / 2 ** 32;
  };
}

async function pages(collection: Collection, filter: Filter, sort: Sort, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await collection.find(filter, { sort, limit, ...(cursor ? { cursor } : {}) });
    ids.push(...page.items.map((d) => d._id));
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

describe('embedded read store: reading an index in sort order', () => {
  it('pages exactly as a full scan does, with ties, missing values and writes between queries', async () => {
    const indexed = new EmbeddedReadStore(':memory:');
    const plain = new EmbeddedReadStore(':memory:');
    const a = indexed.collection('guests');
    const b = plain.collection('guests');
    await a.createIndex({ name: 'event_name', keys: { eventId: 1, last: 1, first: 1 } });
    await a.createIndex({ name: 'event_score', keys: { eventId: 1, score: -1 } });
    const rand = random(7);
    const docs: Doc[] = Array.from({ length: 500 }, (_, i) => ({
      _id: `g${String(i).padStart(4, '0')}`,
      eventId: ['e1', 'e2'][i % 2]!,
      ...(rand() < 0.9 ? { last: ['Ames', 'Brown', 'brown', 'Chen', ''][Math.floor(rand() * 5)] } : {}),
      ...(rand() < 0.9 ? { first: ['Al', 'Bo', 'Cy'][Math.floor(rand() * 3)] } : {}),
      score: Math.floor(rand() * 10),
      info: rand() < 0.3 ? 'needs wheelchair' : 'none',
    }));
    for (const store of [indexed, plain]) {
      await store.applyBatch(docs.map(({ _id, ...doc }) => ({ kind: 'replace', collection: 'guests', id: _id, doc })));
    }
    const queries: [Filter, Sort][] = [
      [{ eventId: 'e1' }, { last: 1, first: 1 }],
      [{ eventId: 'e2', info: { $regex: 'WHEEL', $options: 'i' } }, { last: 1, first: 1 }],
      [{ eventId: 'e1', score: { $gte: 3 } }, { score: -1 }],
      [{ $and: [{ eventId: 'e2' }, { first: { $in: ['Al', 'Cy'] } }] }, { last: 1, first: 1 }],
    ];
    const check = async () => {
      for (const [filter, sort] of queries) {
        for (const limit of [1, 7, 100]) expect(await pages(a, filter, sort, limit)).toEqual(await pages(b, filter, sort, limit));
      }
    };
    await check();
    // Writes that move documents in the order, add and remove some, and leave others alone.
    for (const store of [indexed, plain]) {
      await store.applyBatch([
        { kind: 'update', collection: 'guests', id: 'g0002', update: { $set: { last: 'Zzz' } } },
        { kind: 'update', collection: 'guests', id: 'g0004', update: { $set: { score: 99, info: 'x' } } },
        { kind: 'update', collection: 'guests', id: 'g0006', update: { $inc: { visits: 1 } } },
        { kind: 'delete', collection: 'guests', id: 'g0008' },
        { kind: 'replace', collection: 'guests', id: 'g9999', doc: { eventId: 'e1', last: 'Zed', score: 5 } },
        { kind: 'update', collection: 'guests', id: 'g0010', update: { $set: { eventId: 'e2', first: 'Al', info: 'needs wheelchair' } } },
      ]);
    }
    await check();
    await indexed.close();
    await plain.close();
  });

  it('finds literal texts through a substring index exactly as a full scan does', async () => {
    const indexed = new EmbeddedReadStore(':memory:');
    const plain = new EmbeddedReadStore(':memory:');
    await indexed.collection('guests').createIndex({ name: 'info', keys: { info: 1 }, substring: true });
    await indexed.collection('guests').createIndex({ name: 'event_name', keys: { eventId: 1, last: 1 } });
    const rand = random(11);
    const words = ['Wheelchair', 'vegan', 'a.b*c', 'Ünïcode', 'sign-language', 'x', 'table 12', '(press)'];
    const docs = Array.from({ length: 400 }, (_, i) => ({
      id: `g${i}`,
      doc: {
        eventId: ['e1', 'e2'][i % 2]!,
        last: `L${Math.floor(rand() * 50)}`,
        ...(rand() < 0.9 ? { info: `${words[Math.floor(rand() * words.length)]} ${i % 37 === 0 ? 'rare-token' : ''}` } : {}),
      },
    }));
    for (const store of [indexed, plain]) {
      await store.applyBatch(docs.map(({ id, doc }) => ({ kind: 'replace' as const, collection: 'guests', id, doc })));
    }
    const escape = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    for (const text of ['wheel', 'WHEELCHAIR', 'a.b*c', 'ünï', 'rare-token', 'sign-lang', 'le 1', '(press)', 'zzz', 'x', 'ab']) {
      const filter = { eventId: 'e1', info: { $regex: escape(text), $options: 'i' } };
      const sort = { last: 1 as const };
      for (const limit of [3, 100]) {
        expect(await pages(indexed.collection('guests'), filter, sort, limit), text).toEqual(await pages(plain.collection('guests'), filter, sort, limit));
      }
    }
    await indexed.applyBatch([{ kind: 'update', collection: 'guests', id: 'g0', update: { $set: { info: 'now vegan only' } } }]);
    await plain.applyBatch([{ kind: 'update', collection: 'guests', id: 'g0', update: { $set: { info: 'now vegan only' } } }]);
    const rare = { eventId: 'e1', info: { $regex: 'rare-token', $options: 'i' } };
    expect(await pages(indexed.collection('guests'), rare, { last: 1 }, 10)).toEqual(await pages(plain.collection('guests'), rare, { last: 1 }, 10));
    await indexed.close();
    await plain.close();
  });
});
