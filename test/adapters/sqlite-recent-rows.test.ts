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
import { RecentRows, SqliteEventStore, type StoredRow } from '../../src/adapters/eventstore/sqlite.js';
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
      if (store === here) await vi.waitFor(() => expect(subscriber.seen.length).toBeGreaterThanOrEqual(2 * n + 2), { timeout: 60_000 });
    }
    await vi.waitFor(() => expect(subscriber.seen).toHaveLength(12), { timeout: 60_000 });
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
    await vi.waitFor(() => expect(subscriber.seen).toHaveLength(3), { timeout: 60_000 });
    expect(summary(subscriber.seen)).toEqual(['1:a:1', '2:b:3', '3:c:4']);
    await subscriber.stop();
  });

  it('applies a subscription\'s stream filter to the rows it is served', async () => {
    const store = open(openFile());
    const guests = collectSubscription(store, { filter: { streamPrefixes: ['guest-'] } });
    const all = collectSubscription(store);
    for (let n = 0; n < 4; n++) await store.append(n % 2 === 0 ? `guest-${n}` : `event-${n}`, [event('Happened', n)], 'no_stream');
    await vi.waitFor(() => expect(all.seen).toHaveLength(4), { timeout: 60_000 });
    await vi.waitFor(() => expect(summary(guests.seen)).toEqual(['1:guest-0:0', '3:guest-2:2']), { timeout: 60_000 });
    await guests.stop();
    await all.stop();
  });

  it('delivers another thread\'s announced rows in position order, each once, with this one\'s around them', async () => {
    const file = openFile();
    const here = open(file);
    const there = open(file);
    // As the workers' thread does (src/workers/thread.ts): its commits and their rows are announced here.
    there.onAppend((durablePosition, rows) => here.announceAppend(durablePosition, rows));
    here.expectAnnouncements();
    const subscriber = collectSubscription(here);
    for (let n = 0; n < 8; n++) await (n % 3 === 1 ? there : here).append(`s-${n}`, [event('Happened', n), event('Happened', n)], 'no_stream');
    await vi.waitFor(() => expect(subscriber.seen).toHaveLength(16), { timeout: 60_000 });
    expect(summary(subscriber.seen)).toEqual(Array.from({ length: 16 }, (_, i) => `${i + 1}:s-${Math.floor(i / 2)}:${Math.floor(i / 2)}`));
    await subscriber.stop();
  });
});

describe('a store told to expect announcements', () => {
  it('still delivers the rows of a process that announces nothing (found by its polls), in order, each once', async () => {
    const file = openFile();
    const here = open(file);
    const elsewhere = open(file);
    here.expectAnnouncements();
    const subscriber = collectSubscription(here);
    for (let n = 0; n < 6; n++) {
      const store = n % 2 === 0 ? here : elsewhere;
      await store.append(`s-${n}`, [event('Happened', n), event('Happened', n)], 'no_stream');
      if (store === here) await vi.waitFor(() => expect(subscriber.seen.length).toBeGreaterThanOrEqual(2 * n + 2), { timeout: 60_000 });
    }
    await vi.waitFor(() => expect(subscriber.seen).toHaveLength(12), { timeout: 60_000 });
    expect(summary(subscriber.seen)).toEqual(Array.from({ length: 12 }, (_, i) => `${i + 1}:s-${Math.floor(i / 2)}:${Math.floor(i / 2)}`));
    await subscriber.stop();
  });
});

describe('RecentRows', () => {
  const rows = (from: number, to: number): StoredRow[] =>
    Array.from({ length: to - from + 1 }, (_, i) => ({ position: from + i, id: `e${from + i}`, stream: 's', revision: i, type: 'T', data: '{}', metadata: '{}', recorded_at: '' }));
  const positions = (served?: { rows: StoredRow[] }) => served?.rows.map((r) => r.position);

  it('puts a run announced late (another thread\'s commit) into its place and serves the unbroken run', () => {
    const recent = new RecentRows(64);
    recent.add(rows(1, 3));
    recent.add(rows(6, 7));
    expect(positions(recent.after(0, 100, 100))).toEqual([1, 2, 3]);
    expect(recent.after(3, 100, 100)).toBeUndefined();
    recent.add(rows(4, 5));
    expect(positions(recent.after(0, 100, 100))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(positions(recent.after(3, 100, 5))).toEqual([4, 5]);
  });

  it('ignores a run it holds already, and keeps the newest rows when it outgrows its size', () => {
    const recent = new RecentRows(8);
    recent.add(rows(10, 13));
    recent.add(rows(10, 11));
    expect(positions(recent.after(9, 100, 100))).toEqual([10, 11, 12, 13]);
    recent.add(rows(2, 3));
    expect(positions(recent.after(1, 100, 100))).toEqual([2, 3]);
    recent.add(rows(14, 16));
    // Nine rows: the oldest go, the newest four stay.
    expect(recent.after(1, 100, 100)).toBeUndefined();
    expect(recent.after(9, 100, 100)).toBeUndefined();
    expect(positions(recent.after(12, 100, 100))).toEqual([13, 14, 15, 16]);
  });
});
