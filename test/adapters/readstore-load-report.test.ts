/**
 * The embedded read store reads a collection from its file into memory on first use, synchronously
 * and for as long as the collection is large: the start says which collection, how many documents
 * and how long (docs/operations.md, "SQLite files"), so a slow restart has a name.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedReadStore, type CollectionLoaded } from '../../src/adapters/readstore/embedded.js';
import { loggedLines } from '../support/log-lines.js';
import { createClient, startTestService } from '../support/service.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readstore-load-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('loading a collection into memory', () => {
  it('is reported once per collection, with its documents and the time it took', async () => {
    const file = path.join(dir, 'read-models.sqlite');
    const writer = new EmbeddedReadStore(file);
    await writer.applyBatch(Array.from({ length: 1_234 }, (_, i) => ({ kind: 'replace' as const, collection: 'guests', id: `g${i}`, doc: { n: i } })));
    await writer.close();

    const loaded: CollectionLoaded[] = [];
    const reader = new EmbeddedReadStore(file, { onCollectionLoaded: (l) => loaded.push(l) });
    expect(await reader.collection('guests').get('g7')).toMatchObject({ n: 7 });
    expect(await reader.collection('guests').get('g8')).toMatchObject({ n: 8 });
    await reader.collection('events').get('none');
    await reader.close();
    expect(loaded.map(({ collection, documents }) => ({ collection, documents }))).toEqual([
      { collection: 'guests', documents: 1_234 },
      { collection: 'events', documents: 0 },
    ]);
    expect(loaded.every((l) => Number.isInteger(l.ms) && l.ms >= 0)).toBe(true);
  });

  it('is logged by the service (debug, or info when it held the start a quarter second or more)', async () => {
    const logs = loggedLines('debug');
    const service = await startTestService({}, { logger: logs.logger });
    try {
      await createClient(service);
      const lines = logs.lines.filter((line) => line.msg === 'read store collection loaded into memory');
      expect(lines.map((line) => line.collection)).toContain('accounts');
      for (const line of lines) expect(line).toMatchObject({ documents: expect.any(Number), ms: expect.any(Number) });
    } finally {
      await service.close();
    }
  });
});
