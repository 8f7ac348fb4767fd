/**
 * WAL checkpoints run in a background thread (src/adapters/sqlite-checkpointer.ts): commits on
 * the event loop only append to the WAL, and the pages still reach the database file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import { backstopPages } from '../../src/adapters/sqlite-checkpointer.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkpointer-'));
  dirs.push(dir);
  return dir;
};

/** Polls until `done` (hang guard: 20 s, far above the checkpoint interval). */
async function eventually(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('not within 20 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const size = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0);

describe('background WAL checkpoints', () => {
  it('copies committed event-store pages into the database file below the automatic threshold', async () => {
    const file = path.join(tempDir(), 'events.sqlite');
    const store = new SqliteEventStore(file, { synchronous: 'FULL' });
    try {
      const before = size(file);
      const padding = 'x'.repeat(2_000);
      // ~2 MB of events: far below the backstop (SQLite alone would leave them all in the WAL).
      for (let i = 0; i < 20; i++) {
        await store.appendMany(
          Array.from({ length: 50 }, (_, k) => ({
            streamName: `s-${i}-${k}`,
            events: [{ id: crypto.randomUUID(), type: 'Padded', data: { padding }, metadata: { tenantId: 't', actor: { type: 'system', id: 'test' }, correlationId: 'c', occurredAt: new Date().toISOString() } }],
            expectedRevision: 'no_stream' as const,
          })),
        );
      }
      expect(size(`${file}-wal`)).toBeLessThan(backstopPages * 4096);
      await eventually(() => size(file) > before + 1_000_000);
      // Everything appended is still there.
      expect(await store.headPosition()).toBe(1000);
    } finally {
      await store.close();
    }
  });

  it('does the same for the read store, and closing releases the file', async () => {
    const file = path.join(tempDir(), 'read-models.sqlite');
    const store = new EmbeddedReadStore(file);
    const docs = store.collection('docs');
    const before = size(file);
    await store.applyBatch(Array.from({ length: 1_000 }, (_, i) => ({ kind: 'replace' as const, collection: 'docs', id: `d${i}`, doc: { text: 'y'.repeat(2_000) } })));
    await eventually(() => size(file) > before + 1_000_000);
    expect(await docs.count()).toBe(1_000);
    await store.close();
    // Reopened: the documents were persisted.
    const again = new EmbeddedReadStore(file);
    try {
      expect(await again.collection('docs').count()).toBe(1_000);
    } finally {
      await again.close();
    }
  });
});
