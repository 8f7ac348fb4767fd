/**
 * The embedded read store's update of a document with the common operators (applySimpleUpdate in
 * src/adapters/readstore/embedded.ts: every check-in's guest, counters and timeline minutes), as
 * any change to make it cheaper must keep it (session 27 tried one: docs/benchmarks.md, "The
 * door's CPU, session 27"): the stored document is a new object and the version before it is
 * unchanged (nested objects included), several paths under one parent all land, the key order
 * (and the file's JSON text) is the one the operators give, and a path given twice or inside
 * another is refused as MongoDB refuses it (through mingo), however many paths there are.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { Update } from '../../src/adapters/readstore/port.js';

const dir = mkdtempSync(join(tmpdir(), 'scancpu-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fileText = (file: string, id: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT body FROM readstore_docs WHERE collection = ? AND id = ?').get('stats', id) as { body: string }).body;
  } finally {
    db.close();
  }
};

async function storeWith(doc: Record<string, unknown>, file = ':memory:') {
  const store = new EmbeddedReadStore(file);
  await store.applyBatch([{ kind: 'replace', collection: 'stats', id: 's1', doc }]);
  return store;
}

describe('an update with the common operators', () => {
  it('writes several paths under one parent, leaves the version before unchanged, and keeps the key order', async () => {
    const file = join(dir, 'order.sqlite');
    const store = await storeWith({ eventId: 'e1', gates: { G0: { admissions: 1, people: 2 }, G1: { admissions: 5 } }, devices: { d0: { admissions: 1 } } }, file);
    const before = (await store.collection('stats').get('s1', { readOnly: true }))!;
    const beforeText = JSON.stringify(before);
    await store.applyBatch([
      {
        kind: 'update',
        collection: 'stats',
        id: 's1',
        update: {
          $set: { clientId: 'c1', eventId: 'e1' },
          $inc: { 'gates.G0.admissions': 1, 'gates.G0.people': 3, 'gates.G2.admissions': 1, 'gates.G2.people': 1, 'devices.d0.admissions': 1, 'devices.d0.people': 1, 'rejected.blocked': 1 },
        },
      },
    ]);
    const after = (await store.collection('stats').get('s1', { readOnly: true }))!;
    const expected = {
      _id: 's1',
      eventId: 'e1',
      gates: { G0: { admissions: 2, people: 5 }, G1: { admissions: 5 }, G2: { admissions: 1, people: 1 } },
      devices: { d0: { admissions: 2, people: 1 } },
      clientId: 'c1',
      rejected: { blocked: 1 },
    };
    expect(after).toStrictEqual(expected);
    expect(JSON.stringify(after)).toBe(JSON.stringify(expected));
    // Copy on write: the version before (held by a reader) is not changed, nor any object inside it.
    expect(JSON.stringify(before)).toBe(beforeText);
    expect(after).not.toBe(before);
    expect(after.gates).not.toBe(before.gates);
    expect((after.gates as Record<string, unknown>).G0).not.toBe((before.gates as Record<string, unknown>).G0);
    // An object no path went through is shared, as before (stored documents are never changed in place).
    expect((after.gates as Record<string, unknown>).G1).toBe((before.gates as Record<string, unknown>).G1);
    await store.close();
    expect(fileText(file, 's1')).toBe(JSON.stringify(expected));
  });

  it('$unset and $set under one parent, and $unset of a missing path creates nothing', async () => {
    const store = await storeWith({ a: { x: 1, y: 2 }, keep: true });
    await store.applyBatch([{ kind: 'update', collection: 'stats', id: 's1', update: { $unset: { 'a.x': '', 'missing.deep': '' }, $set: { 'a.z': 3 } } }]);
    expect(await store.collection('stats').get('s1', { readOnly: true })).toStrictEqual({ _id: 's1', a: { y: 2, z: 3 }, keep: true });
    await store.close();
  });

  it('$setOnInsert is ignored on an existing document, and a field without an operator is refused', async () => {
    const store = await storeWith({ n: 1 });
    await store.applyBatch([{ kind: 'update', collection: 'stats', id: 's1', upsert: true, update: { $setOnInsert: { created: 'x' }, $inc: { n: 1 } } }]);
    expect(await store.collection('stats').get('s1', { readOnly: true })).toStrictEqual({ _id: 's1', n: 2 });
    await expect(store.applyBatch([{ kind: 'update', collection: 'stats', id: 's1', update: { $inc: { n: 1 }, plain: 1 } as unknown as Update }])).rejects.toThrow(
      'update must use operators ($set, $inc, ...), got field plain',
    );
    expect(await store.collection('stats').get('s1', { readOnly: true })).toStrictEqual({ _id: 's1', n: 2 });
    await store.close();
  });

  const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]));
  const conflicts: Array<[string, Update]> = [
    ['one path under two operators', { $set: { a: 1 }, $inc: { a: 1 } }],
    ['a path inside another', { $set: { a: { b: 1 } }, $inc: { 'a.b': 1 } }],
    ['a path inside another, the inner one first', { $inc: { 'a.b.c': 1 }, $set: { 'a.b': 2 } }],
    ['one path twice among 40', { $set: many(30), $inc: { ...many(9), f29: 1 } }],
    ['a path inside another among 40', { $set: { ...many(39), nested: { x: 1 } }, $unset: { 'nested.x': '' } }],
  ];

  it.each(conflicts)('%s is refused as MongoDB refuses it, and nothing is written', async (_label, update) => {
    const store = await storeWith({ a: { b: { c: 1 } }, nested: { x: 0 } });
    await expect(store.applyBatch([{ kind: 'update', collection: 'stats', id: 's1', update }])).rejects.toThrow();
    expect(await store.collection('stats').get('s1', { readOnly: true })).toStrictEqual({ _id: 's1', a: { b: { c: 1 } }, nested: { x: 0 } });
    await store.close();
  });

  const notConflicts: Array<[string, Update, Record<string, unknown>]> = [
    ['a name that only starts like another (ab, a)', { $set: { ab: 1 }, $inc: { 'a.c': 1 } }, { _id: 's1', a: { b: { c: 1 }, c: 1 }, nested: { x: 0 }, ab: 1 }],
    ['siblings (a.b.c, a.bc)', { $inc: { 'a.b.c': 1, 'a.bc': 2 } }, { _id: 's1', a: { b: { c: 2 }, bc: 2 }, nested: { x: 0 } }],
    ['40 distinct paths', { $set: many(30), $inc: { ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`g${i}`, i])) } }, { _id: 's1', a: { b: { c: 1 } }, nested: { x: 0 }, ...many(30), ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`g${i}`, i])) }],
  ];

  it.each(notConflicts)('%s is applied', async (_label, update, expected) => {
    const store = await storeWith({ a: { b: { c: 1 } }, nested: { x: 0 } });
    await store.applyBatch([{ kind: 'update', collection: 'stats', id: 's1', update }]);
    const stored = await store.collection('stats').get('s1', { readOnly: true });
    expect(stored).toStrictEqual(expected);
    expect(JSON.stringify(stored)).toBe(JSON.stringify(expected));
    await store.close();
  });
});
