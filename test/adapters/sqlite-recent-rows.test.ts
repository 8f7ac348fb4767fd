/**
 * A caught-up subscriber of the embedded event store reads the rows its process just committed
 * from memory instead of the table (src/adapters/eventstore/sqlite.ts, RecentRows). What it
 * delivers must be what the table holds: rows another process committed in between, appends
 * refused inside a group commit, and stream filters included.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { collectSubscription } from '../support/collect-subscription.js';
import type { NewEvent, StoredEvent } from '../../src/adapters/eventstore/port.js';

const dirs: string[] = [];
const stores: SqliteEventStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function openFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recent-rows-'));
  dirs.push(dir);
  return path.join(dir, 'events.sqlite');
}

function open(file: string): SqliteEventStore {
  const store = new SqliteEventStore(file, { pollIntervalMs: 20 });
  stores.push(store);
  return store;
}

const event = (type: string, n: number): NewEvent => ({
  id: crypto.randomUUID(),
  type,
  data: { n },
  metadata: { tenantId: 't', actor: { type: 'system', id: 'test' }, correlationId: crypto.randomUUID(), occurredAt: new Date().toISOString() },
});


const summary = (events: StoredEvent[]) => events.map((e) => `${e.position}:${e.streamName}:${(e.data as { n: number }).n}`);

describe('subscribers served from the rows just committed', () => {
  it('delivers the rows another process committed between this one\'s, in position order, each once', async () => {
    const file = openFile();
    const here = open(file);
    const there = open(file);
    const subscriber = collectSubscription(here);
    for (let n = 0; n < 6; n++) {
      const store = n % 2 === 0 ? here : there;
      await store.append(`s-${n}`, [event('Happened', n), event('Happened', n)], 'no_stream');
      // Let the subscriber catch up on this process's rows, so the next read starts at a gap.
      if (store === here) await vi.waitFor(() => expect(subscriber.seen.length).toBeGreaterThanOrEqual(2 * n + 2), { timeout: 10_000 });
    }
    await vi.waitFor(() => expect(subscriber.seen).toHaveLength(12), { timeout: 10_000 });
    const table = await here.readStream('s-0');
    expect(table).toHaveLength(2);
    expect(summary(subscriber.seen)).toEqual(Array.from({ length: 12 }, (_, i) => `${i + 1}:s-${Math.floor(i / 2)}:${Math.floor(i / 2)}`));
    await subscriber.stop();
  });

  it('delivers nothing of an append refused inside a group commit, and the rows after it', async () => {
    const store = open(openFile());
    const subscriber = collectSubscription(store);
    // Same tick: one group commit; the second append to the same new stream is refused.
    const [first, second, third] = await Promise.allSettled([
      store.append('a', [event('Happened', 1)], 'no_stream'),
      store.append('a', [event('Happened', 2)], 'no_stream'),
      store.append('b', [event('Happened', 3)], 'no_stream'),
    ]);
    expect(first.status).toBe('fulfilled');
    expect(second.status).toBe('rejected');
    expect(third.status).toBe('fulfilled');
    await store.append('c', [event('Happened', 4)], 'no_stream');
    await vi.waitFor(() => expect(subscriber.seen).toHaveLength(3), { timeout: 10_000 });
    expect(summary(subscriber.seen)).toEqual(['1:a:1', '2:b:3', '3:c:4']);
    await subscriber.stop();
  });

  it('applies a subscription\'s stream filter to the rows it is served', async () => {
    const store = open(openFile());
    const guests = collectSubscription(store, { filter: { streamPrefixes: ['guest-'] } });
    const all = collectSubscription(store);
    for (let n = 0; n < 4; n++) await store.append(n % 2 === 0 ? `guest-${n}` : `event-${n}`, [event('Happened', n)], 'no_stream');
    await vi.waitFor(() => expect(all.seen).toHaveLength(4), { timeout: 10_000 });
    await vi.waitFor(() => expect(summary(guests.seen)).toEqual(['1:guest-0:0', '3:guest-2:2']), { timeout: 10_000 });
    await guests.stop();
    await all.stop();
  });
});
