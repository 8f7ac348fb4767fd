/**
 * A replaced document of plain JSON values is copied without a JSON round trip (plainDocument in
 * src/adapters/readstore/embedded.ts, the import's guests). What the round trip guaranteed still
 * holds, for those documents and for the ones it still normalises: the stored document, its key
 * order and the file's JSON text are what JSON gives; undefined fields are dropped, -0 is 0, a Date
 * is its ISO text, and nothing the writer holds is shared with (or changes) the stored document.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';

const dir = mkdtempSync(join(tmpdir(), 'importcpu-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The document as JSON keeps it: what the stored one must equal, key order included. */
const asJson = (id: string, doc: Record<string, unknown>) => {
  const { _id: _ignored, ...fields } = doc;
  return JSON.parse(JSON.stringify({ _id: id, ...fields })) as Record<string, unknown>;
};

const fileText = (file: string, id: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT body FROM readstore_docs WHERE collection = ? AND id = ?').get('guests', id) as { body: string }).body;
  } finally {
    db.close();
  }
};

describe('a replaced document is stored as JSON would store it', () => {
  const cases: Array<[string, () => Record<string, unknown>]> = [
    ['plain values (an imported guest)', () => ({ firstName: 'Ada', lastName: 'Lovelace', tagList: ['vip', 'b'], plusOnes: 2, inside: false, note: null, scannedBy: { id: 'u1', username: 'door' } })],
    ['an undefined field, nested and at the top', () => ({ firstName: 'Ada', email: undefined, nested: { a: 1, gone: undefined } })],
    ['-0, at the top and nested', () => ({ n: -0, nested: { n: -0 }, list: [-0, 1] })],
    ['an _id among the fields (the op id wins, first)', () => ({ a: 1, _id: 'other', b: 2 })],
    ['integer-like keys', () => ({ b: 1, 10: 'x', 2: 'y', a: [1] })],
    ['a Date (its ISO text)', () => ({ at: new Date('2026-12-07T10:00:00Z'), nested: { at: new Date('2026-01-01T00:00:00Z') } })],
    ['NaN, Infinity and undefined in an array', () => ({ x: Number.NaN, y: Number.POSITIVE_INFINITY, list: [1, undefined, 3] })],
    ['a toJSON', () => ({ money: { toJSON: () => '12.50' } })],
    ['a __proto__ key of its own', () => JSON.parse('{"a":1,"__proto__":{"polluted":true}}') as Record<string, unknown>],
    ['a function (dropped)', () => ({ a: 1, f: () => 1 })],
  ];

  it.each(cases)('%s: the document, its key order and the file text', async (_label, make) => {
    const file = join(dir, `${Math.random().toString(36).slice(2)}.sqlite`);
    const store = new EmbeddedReadStore(file);
    const doc = make();
    const expected = asJson('g1', doc);
    await store.applyBatch([{ kind: 'replace', collection: 'guests', id: 'g1', doc }]);
    const stored = (await store.collection('guests').get('g1', { readOnly: true }))!;
    expect(stored).toStrictEqual(expected);
    expect(JSON.stringify(stored)).toBe(JSON.stringify(expected));
    expect(Object.keys(stored)).toEqual(Object.keys(expected));
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    await store.close();
    expect(fileText(file, 'g1')).toBe(JSON.stringify(expected));
    // Loaded again from the file: the same document.
    const reopened = new EmbeddedReadStore(file);
    expect(await reopened.collection('guests').get('g1')).toStrictEqual(expected);
    await reopened.close();
  });

  it('shares nothing with the writer: changing what was written changes no stored document', async () => {
    const store = new EmbeddedReadStore(':memory:');
    const tags = ['vip'];
    const scannedBy = { id: 'u1', username: 'door' };
    const doc = { tagList: tags, scannedBy, deep: { list: [{ k: 1 }] } };
    await store.applyBatch([{ kind: 'replace', collection: 'guests', id: 'g1', doc }]);
    tags.push('changed');
    scannedBy.username = 'changed';
    doc.deep.list[0]!.k = 2;
    const stored = (await store.collection('guests').get('g1', { readOnly: true }))!;
    expect(stored).toStrictEqual({ _id: 'g1', tagList: ['vip'], scannedBy: { id: 'u1', username: 'door' }, deep: { list: [{ k: 1 }] } });
    expect(stored.tagList).not.toBe(tags);
    expect(stored.scannedBy).not.toBe(scannedBy);
    await store.close();
  });

  it('a document nested deeper than the copy goes (or a cycle) takes the round trip, with its error', async () => {
    const store = new EmbeddedReadStore(':memory:');
    let deep: Record<string, unknown> = { leaf: undefined, n: -0 };
    for (let i = 0; i < 40; i++) deep = { child: deep };
    await store.applyBatch([{ kind: 'replace', collection: 'guests', id: 'deep', doc: deep }]);
    expect(await store.collection('guests').get('deep', { readOnly: true })).toStrictEqual(asJson('deep', deep));
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    await expect(store.applyBatch([{ kind: 'replace', collection: 'guests', id: 'c', doc: cyclic }])).rejects.toThrow(TypeError);
    expect(await store.collection('guests').get('c')).toBeNull();
    await store.close();
  });
});
