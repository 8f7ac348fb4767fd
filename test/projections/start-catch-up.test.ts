import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { Projection } from '../../src/projections/projection.js';
import { ProjectionRunner } from '../../src/projections/runner.js';
import { newEvent } from '../contract/eventstore.contract.js';
import { loggedLines } from '../support/log-lines.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-catch-up-'));
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const counter: Projection = {
  name: 'counter',
  filter: { streamPrefixes: ['counted-'] },
  collections: [{ name: 'counted', indexes: [] }],
  apply: (event) => [{ kind: 'replace', collection: 'counted', id: event.id, doc: { type: event.type } }],
};

describe('projections behind at start', () => {
  it('say how far behind they start and when they have caught up', async () => {
    const store = new SqliteEventStore(path.join(dir, 'events.sqlite'), { synchronous: 'NORMAL' });
    const readStore = new EmbeddedReadStore(path.join(dir, 'read.sqlite'));
    closers.push(() => readStore.close(), () => store.close());
    for (let chunk = 0; chunk < 5; chunk++) {
      await store.appendMany(Array.from({ length: 100 }, (_, i) => ({ streamName: `counted-${chunk}-${i}`, events: [newEvent('Counted', { i })], expectedRevision: 'no_stream' as const })));
    }
    const head = await store.headPosition();

    const { logger, lines } = loggedLines();
    const runner = new ProjectionRunner(store, readStore, [counter], logger, { batchSize: 100 });
    await runner.start();
    closers.push(() => runner.stop());
    expect(await runner.waitFor(head, 60_000)).toBe(true);
    const messages = lines.map((l) => l.msg);
    expect(lines.find((l) => l.msg === 'projections catching up')).toMatchObject({ position: -1, head });
    // Said once the runner is at the head it found at start, after the batches of the catch-up.
    await expect.poll(() => lines.find((l) => l.msg === 'projections caught up'), { timeout: 60_000 }).toMatchObject({ from: -1, head, events: 500 });
    expect(messages.indexOf('projections caught up')).toBeGreaterThan(messages.lastIndexOf('projections applied'));
    await runner.stop();

    // Started again with nothing to catch up: neither line.
    const again = loggedLines();
    const second = new ProjectionRunner(store, readStore, [counter], again.logger, { batchSize: 100 });
    await second.start();
    closers.push(() => second.stop());
    await second.stop();
    expect(again.lines.map((l) => l.msg)).not.toContain('projections catching up');
  });
});
