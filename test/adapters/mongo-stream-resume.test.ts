/**
 * The MongoDB read store's stream() when the server kills its cursor midway (a cursor idle for
 * `cursorTimeoutMillis`, 10 minutes, or whose session expired after 30): the driver never retries
 * a getMore, so the stream reopens after the last document it yielded (keyset) and the export
 * gets every row; a failure it cannot resume on ends the export with that error and no file.
 *
 * The idle timeout itself cannot be waited for in a test: the cursor is killed with the
 * `killCursors` command instead, so the next getMore fails with the server's own CursorNotFound
 * (code 43), as after a timeout. Needs a MongoDB-protocol server: skipped without MONGO_URL
 * (scripts/test-servers.sh starts FerretDB; CI sets it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Collection as DriverCollection, FindCursor, MongoClient, MongoServerError } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MongoReadStore } from '../../src/adapters/readstore/mongo.js';
import { writeCsv } from '../../src/exports/csv.js';
import { storeExport, type ExportJob } from '../../src/commands/export.js';
import type { Services } from '../../src/commands/services.js';
import type { CommandContext } from '../../src/commands/handle-command.js';

const url = process.env.MONGO_URL;
const dbName = `stream_resume_${Date.now()}_${process.pid}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stream-resume-'));

type Row = {
  _id: string;
  group: number;
  name: string;
};
const COUNT = 1_000;
// Sorted by a key with many equal values, so resuming must use the `_id` tie-break too.
const rows: Row[] = Array.from({ length: COUNT }, (_, i) => ({ _id: `r${String(i).padStart(4, '0')}`, group: (i * 7) % 13, name: `guest ${i}` }));
const inOrder = [...rows].sort((a, b) => a.group - b.group || (a._id < b._id ? -1 : 1)).map((r) => r._id);

describe.skipIf(!url)('MongoDB read store: stream() resumes after the server kills its cursor (MONGO_URL; skipped without one, always set under CI)', () => {
  let store: MongoReadStore;
  let raw: MongoClient;
  let opened: FindCursor[];
  beforeAll(async () => {
    store = new MongoReadStore({ url: url!, dbName });
    raw = new MongoClient(url!);
    await raw.db(dbName).collection<Row>('rows').insertMany(rows);
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    await raw.db(dbName).dropDatabase().catch(() => undefined);
    await raw.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Records every cursor the store opens. */
  const watchCursors = () => {
    opened = [];
    const find = DriverCollection.prototype.find;
    vi.spyOn(DriverCollection.prototype, 'find').mockImplementation(function (this: DriverCollection, ...args: unknown[]) {
      const cursor = (find as (...a: unknown[]) => FindCursor).apply(this, args);
      opened.push(cursor);
      return cursor;
    } as never);
  };
  /** What the server does to an idle cursor: kills it, so the next getMore answers CursorNotFound. */
  const killLatestCursor = async () => {
    const cursor = opened[opened.length - 1]!;
    const answer = await raw.db(dbName).command({ killCursors: 'rows', cursors: [cursor.id] });
    expect(answer.cursorsKilled).toHaveLength(1);
  };

  it('yields every document once, in order, when its cursor is killed twice midway', async () => {
    watchCursors();
    const seen: string[] = [];
    for await (const doc of store.collection<Row>('rows').stream({}, { sort: { group: 1 }, batchSize: 100 })) {
      seen.push(doc._id);
      if (seen.length === 150 || seen.length === 640) await killLatestCursor();
    }
    expect(seen).toEqual(inOrder);
    expect(opened).toHaveLength(3);
  });

  it('resumes a filtered stream sorted descending after the filter and the cursor position together', async () => {
    watchCursors();
    const filter = { group: { $gte: 4 } };
    const expected = rows
      .filter((r) => r.group >= 4)
      .sort((a, b) => b.group - a.group || (a._id < b._id ? -1 : 1))
      .map((r) => r._id);
    const seen: string[] = [];
    for await (const doc of store.collection<Row>('rows').stream(filter, { sort: { group: -1 }, batchSize: 64 })) {
      seen.push(doc._id);
      if (seen.length === 100) await killLatestCursor();
    }
    expect(seen).toEqual(expected);
  });

  it('writes a whole CSV export although the cursor was killed while the file was being written', async () => {
    watchCursors();
    let pulled = 0;
    async function* guests() {
      for await (const doc of store.collection<Row>('rows').stream({}, { sort: { group: 1 }, batchSize: 100 })) {
        pulled += 1;
        if (pulled === 333) await killLatestCursor();
        yield doc;
      }
    }
    const file = path.join(dir, 'whole.csv');
    const written = await writeCsv(guests(), file, [{ name: 'id', kind: 'text', width: 10, value: (r: Row) => r._id }], { timeZone: 'UTC' });
    expect(written).toBe(COUNT);
    const lines = fs.readFileSync(file, 'utf8').replace(/^\uFEFF/, '').trim().split('\r\n');
    expect(lines.slice(1)).toEqual(inOrder);
  });

  it('ends with the error, and the export leaves no file, on a failure it cannot resume on', async () => {
    const find = DriverCollection.prototype.find;
    vi.spyOn(DriverCollection.prototype, 'find').mockImplementation(function (this: DriverCollection, ...args: unknown[]) {
      const cursor = (find as (...a: unknown[]) => FindCursor).apply(this, args);
      return failingAfter(cursor, 250, new MongoServerError({ message: 'Executor error during getMore :: caused by :: operation was interrupted', code: 11601, codeName: 'Interrupted', ok: 0 }));
    } as never);
    const exportDir = path.join(dir, 'exports');
    const job: ExportJob = {
      event: { id: 'e1', title: 'Gala' } as ExportJob['event'],
      zone: { name: 'UTC', source: 'default' },
      kind: 'guests',
      auditType: 'GuestsExported',
      write: (file) =>
        writeCsv(store.collection<Row>('rows').stream({}, { sort: { group: 1 } }), file, [{ name: 'id', kind: 'text', width: 10, value: (r: Row) => r._id }], {
          timeZone: 'UTC',
        }),
    };
    const context = { tenantId: 'c1', now: new Date(), actor: { id: 'u1' }, correlationId: 'x' } as unknown as CommandContext;
    // Nothing after the write is reached: no record, no audit event (services would throw if touched).
    await expect(storeExport({} as Services, { dir: exportDir, ttlMs: 60_000 }, context, 'CSV', job)).rejects.toThrow(/operation was interrupted/);
    expect(fs.readdirSync(exportDir)).toEqual([]);
  });

  it('gives up after repeated resumable failures without a document between them', async () => {
    let calls = 0;
    const find = DriverCollection.prototype.find;
    vi.spyOn(DriverCollection.prototype, 'find').mockImplementation(function (this: DriverCollection, ...args: unknown[]) {
      calls += 1;
      const cursor = (find as (...a: unknown[]) => FindCursor).apply(this, args);
      // The first cursor yields 10 documents; every later one fails before its first.
      return failingAfter(cursor, calls === 1 ? 10 : 0, new MongoServerError({ message: 'cursor id 1 not found', code: 43, codeName: 'CursorNotFound', ok: 0 }));
    } as never);
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const doc of store.collection<Row>('rows').stream({}, { sort: { group: 1 } })) seen.push(doc._id);
      })(),
    ).rejects.toThrow(/not found/);
    expect(seen).toEqual(inOrder.slice(0, 10));
    // The first cursor, then MAX_RESUMES (3) reopenings.
    expect(calls).toBe(4);
  });
});

/** A stand-in cursor: the real one's documents, then `error` after `after` of them. */
function failingAfter(cursor: FindCursor, after: number, error: Error): FindCursor {
  return {
    async *[Symbol.asyncIterator]() {
      let n = 0;
      for await (const doc of cursor) {
        if (n++ === after) throw error;
        yield doc;
      }
    },
    close: () => cursor.close(),
  } as unknown as FindCursor;
}

describe.skipIf(!url)('MongoDB read store: stream() sorts on disk when it must (MONGO_URL; skipped without one)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('asks for allowDiskUse: a stream has no limit, and before MongoDB 6.0 a sort no index covers fails past 100 MB of memory without it', async () => {
    // The guests export sorts by {lastNameLower, firstNameLower, _id}; the index {eventId, lastNameLower,
    // firstNameLower} lacks the `_id` tie-break, so the server sorts every guest of the event itself.
    // FerretDB has no such limit to show: the options the store sends are checked instead.
    const store = new MongoReadStore({ url: url!, dbName: `${dbName}_disk` });
    const options: unknown[] = [];
    const find = DriverCollection.prototype.find;
    vi.spyOn(DriverCollection.prototype, 'find').mockImplementation(function (this: DriverCollection, ...args: unknown[]) {
      options.push(args[1]);
      return (find as (...a: unknown[]) => FindCursor).apply(this, args);
    } as never);
    try {
      for await (const _doc of store.collection('rows').stream({}, { sort: { name: 1 } })) break;
      expect(options).toEqual([expect.objectContaining({ allowDiskUse: true, sort: { name: 1, _id: 1 } })]);
    } finally {
      await store.close();
    }
  });
});
