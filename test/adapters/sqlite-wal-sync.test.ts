/**
 * The embedded event store at synchronous=FULL syncs its WAL off the event loop
 * (src/adapters/eventstore/sqlite.ts, WalSync): an append is acknowledged, and its events reach
 * subscribers, only after an fsync of the WAL that began after the commit has finished. Here
 * `fs.fsync` is held by the test, so what happens before and after the disk answers is visible.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { collectSubscription } from '../support/collect-subscription.js';
import type { NewEvent, StoredEvent } from '../../src/adapters/eventstore/port.js';
import { overloadState } from '../../src/shared/overload-state.js';

const dirs: string[] = [];
const stores: SqliteEventStore[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const store of stores.splice(0)) await store.close().catch(() => undefined);
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function openStore(synchronous: 'FULL' | 'NORMAL' = 'FULL'): { store: SqliteEventStore; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wal-sync-'));
  dirs.push(dir);
  const file = path.join(dir, 'events.sqlite');
  const store = new SqliteEventStore(file, { synchronous, pollIntervalMs: 20 });
  stores.push(store);
  return { store, file };
}

/** Holds every fs.fsync until released; `calls` lists the descriptors' files as they came. */
function holdFsync() {
  const held: { fd: number; callback: (error: NodeJS.ErrnoException | null) => void }[] = [];
  const spy = vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    held.push({ fd, callback });
  }) as typeof fs.fsync);
  return {
    spy,
    get waiting() {
      return held.length;
    },
    /** Lets the held fsyncs run for real (or fail with `error`). */
    release(error?: NodeJS.ErrnoException) {
      for (const { fd, callback } of held.splice(0)) {
        if (error) {
          callback(error);
        } else {
          fs.fsyncSync(fd);
          callback(null);
        }
      }
    },
  };
}

const event = (type: string): NewEvent => ({
  id: crypto.randomUUID(),
  type,
  data: { at: type },
  metadata: { tenantId: 't', actor: { type: 'system', id: 'test' }, correlationId: crypto.randomUUID(), occurredAt: new Date().toISOString() },
});
const tick = () => new Promise((resolve) => setTimeout(resolve, 30));


describe('WAL durability off the event loop (synchronous=FULL)', () => {
  it('acknowledges an append and shows it to subscribers only after the WAL fsync that follows its commit', async () => {
    const { store, file } = openStore();
    const disk = holdFsync();
    const subscriber = collectSubscription(store);
    let acknowledged = false;
    const append = store.append('guest-1', [event('GuestRegistered')], 'no_stream').then((result) => {
      acknowledged = true;
      return result;
    });
    await tick();
    // Committed (another connection reads it) but not acknowledged nor delivered while the disk has not answered.
    const other = new Database(file, { readonly: true });
    expect(other.prepare('SELECT COUNT(*) AS n FROM events').get()).toEqual({ n: 1 });
    other.close();
    expect(disk.waiting).toBe(1);
    expect(acknowledged).toBe(false);
    expect(subscriber.seen).toEqual([]);
    // Meanwhile the event loop is free: a second group commits and waits for the next fsync.
    const second = store.append('guest-2', [event('GuestRegistered')], 'no_stream');
    await tick();
    disk.release();
    const first = await append;
    expect(first.position).toBeGreaterThan(0);
    await tick();
    disk.release();
    await second;
    await vi.waitFor(() => expect(subscriber.seen.map((e) => e.streamName)).toEqual(['guest-1', 'guest-2']), { timeout: 60_000 });
    expect(disk.spy.mock.calls.length).toBeGreaterThanOrEqual(2);
    await subscriber.stop();
  });

  it('syncs rows another process wrote before a subscriber reads them', async () => {
    const { store, file } = openStore();
    const subscriber = collectSubscription(store);
    await store.append('guest-1', [event('GuestRegistered')], 'no_stream');
    await vi.waitFor(() => expect(subscriber.seen).toHaveLength(1), { timeout: 60_000 });
    const disk = holdFsync();
    // Another process's commit at synchronous=NORMAL: in the WAL, not known to be on disk.
    const other = new SqliteEventStore(file, { synchronous: 'NORMAL', pollIntervalMs: 20 });
    stores.push(other);
    await other.append('guest-2', [event('GuestRegistered')], 'no_stream');
    // The positive marker: the subscriber's poll found the row and asked for an fsync (held). Until
    // then, not after a fixed 60 ms (a busy machine fires the 20 ms poll later), and only then the absence.
    await vi.waitFor(() => expect(disk.waiting).toBeGreaterThanOrEqual(1), { timeout: 60_000 });
    expect(subscriber.seen).toHaveLength(1);
    disk.release();
    await vi.waitFor(() => expect(subscriber.seen.map((e) => e.streamName)).toEqual(['guest-1', 'guest-2']), { timeout: 60_000 });
    await subscriber.stop();
  });

  it('refuses the append, and every later one, when the fsync fails; readiness reports it', async () => {
    const { store } = openStore();
    const disk = holdFsync();
    const append = store.append('guest-1', [event('GuestRegistered')], 'no_stream');
    await tick();
    disk.release(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    await expect(append).rejects.toThrow(/could not make its write-ahead log .*events\.sqlite-wal durable \(fsync: EIO.*check the disk/);
    await expect(store.append('guest-2', [event('GuestRegistered')], 'no_stream')).rejects.toThrow(/could not make its write-ahead log/);
    await expect(store.ping()).rejects.toThrow(/could not make its write-ahead log/);
  });

  it('syncs on the event loop while the overload guard sheds load, and off it again after', async () => {
    const { store } = openStore();
    const disk = holdFsync();
    const inline = vi.spyOn(fs, 'fsyncSync');
    overloadState.shedding = true;
    try {
      await store.append('guest-1', [event('GuestRegistered')], 'no_stream');
      expect(inline).toHaveBeenCalledTimes(1);
      expect(disk.spy).not.toHaveBeenCalled();
    } finally {
      overloadState.shedding = false;
    }
    const append = store.append('guest-2', [event('GuestRegistered')], 'no_stream');
    await tick();
    expect(disk.waiting).toBe(1);
    disk.release();
    await append;
  });

  it('at synchronous=NORMAL acknowledges without an fsync of its own', async () => {
    const { store } = openStore('NORMAL');
    const disk = holdFsync();
    await store.append('guest-1', [event('GuestRegistered')], 'no_stream');
    expect(disk.spy).not.toHaveBeenCalled();
  });
});
