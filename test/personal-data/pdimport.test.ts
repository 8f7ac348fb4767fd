/**
 * Issue 14, item 5 (cost, import): the codec's cheaper sealing and reading must keep what the
 * plaintext of recent seals and the key cache promise: a guest erased through this process is
 * never given back in plaintext, not even by a read that was waiting for other guests' keys
 * when the erasure came, and keysFor gives each guest its stored, cached, new or no key.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { NewEvent, StoredEvent } from '../../src/adapters/eventstore/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedKeyStore } from '../../src/adapters/keystore/embedded.js';
import type { KeyStore, StoredDataKey } from '../../src/adapters/keystore/port.js';
import { guestStream } from '../../src/domain/guest.js';
import { dataKeyId } from '../../src/domain/personal-data.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { ERASED_MARK, sealedEventStore } from '../../src/personal-data/sealed-event-store.js';
import { keyringOf } from '../../src/shared/encryption.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const CLIENT = 'client-1';
const master = keyringOf([{ id: 'm1', key: randomBytes(32) }]);
const registered = (guestId: string, email: string): NewEvent => ({
  id: randomUUID(),
  type: 'GuestRegistered',
  data: { guestId, eventId: 'e-1', clientId: CLIENT, firstName: 'Ada', email, barcode: `B-${guestId}`, plusOnes: 1, tags: [] },
  metadata: { tenantId: CLIENT, actor: { type: 'client' as const, id: CLIENT }, correlationId: randomUUID(), occurredAt: new Date().toISOString() },
});

async function firstBatch(store: ReturnType<typeof sealedEventStore>): Promise<StoredEvent[]> {
  const subscription = store.subscribeToAll({ batchSize: 100 });
  try {
    for await (const batch of subscription) if (batch.events.length > 0) return batch.events;
    throw new Error('the subscription ended empty');
  } finally {
    subscription.stop();
  }
}

describe('the plaintext of recent seals and erasure', () => {
  it('a read waiting for one guest’s key gives another guest erased meanwhile as erased, not from the recent seals', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-pdimport-'));
    dirs.push(dir);
    const events = new SqliteEventStore(path.join(dir, 'events.sqlite'), { synchronous: 'FULL' });
    try {
      const keyStore = EmbeddedKeyStore.inEventStore(events);
      const ann = randomUUID();
      const bob = randomUUID();
      // Ann's event sealed by another codec (another process's): this one must read her key.
      await sealedEventStore(events, new DataKeys(keyStore, master)).append(guestStream(CLIENT, ann), [registered(ann, 'ann@example.com')], 'no_stream');
      const keys = new DataKeys(keyStore, master);
      const codec = sealedEventStore(events, keys);
      // Bob's sealed by this one: his plaintext is among its recent seals.
      await codec.append(guestStream(CLIENT, bob), [registered(bob, 'bob@example.com')], 'no_stream');

      // Bob is erased while the read waits for Ann's key.
      const get = keyStore.get.bind(keyStore);
      keyStore.get = async (ids: string[]) => {
        await keys.erase(dataKeyId(CLIENT, bob)!, new Date().toISOString());
        return get(ids);
      };
      const [annEvent, bobEvent] = await firstBatch(codec);
      expect(annEvent!.data.email).toBe('ann@example.com');
      expect(bobEvent!.data).not.toHaveProperty('email');
      expect(bobEvent!.data).not.toHaveProperty('firstName');
      expect(bobEvent!.data[ERASED_MARK]).toBe(true);
      expect(JSON.stringify(bobEvent!.data)).not.toContain('bob@example.com');
    } finally {
      await events.close();
    }
  });

  it('a guest erased right after this process sealed its event reads as erased at once, on every path', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-pdimport-'));
    dirs.push(dir);
    const events = new SqliteEventStore(path.join(dir, 'events.sqlite'), { synchronous: 'FULL' });
    try {
      const keys = new DataKeys(EmbeddedKeyStore.inEventStore(events), master);
      const codec = sealedEventStore(events, keys);
      const guestId = randomUUID();
      const stream = guestStream(CLIENT, guestId);
      await codec.appendMany([{ streamName: stream, events: [registered(guestId, 'cy@example.com')], expectedRevision: 'no_stream' }]);
      const [before] = await codec.readStream(stream);
      expect(before!.data.email).toBe('cy@example.com');

      await keys.erase(dataKeyId(CLIENT, guestId)!, new Date().toISOString());
      const [read] = await codec.readStream(stream);
      const [delivered] = await firstBatch(codec);
      for (const event of [read!, delivered!]) {
        expect(event.data[ERASED_MARK]).toBe(true);
        expect(JSON.stringify(event.data)).not.toContain('cy@example.com');
      }
      // A late write for the erased guest stores nothing personal either.
      await codec.append(stream, [{ ...registered(guestId, 'cy@example.com'), type: 'GuestDetailsChanged', data: { guestId, changes: { email: 'cy2@example.com' } } }], 0);
      const [, late] = await codec.readStream(stream);
      expect(JSON.stringify(late!.data)).not.toContain('cy2@example.com');
    } finally {
      await events.close();
    }
  });
});

describe('DataKeys.keysFor', () => {
  /** A key store in memory: rows by guest id, every look-up recorded. */
  function memoryKeys(): KeyStore & { rows: Map<string, StoredDataKey>; lookedUp: string[][] } {
    const rows = new Map<string, StoredDataKey>();
    const lookedUp: string[][] = [];
    return {
      kind: 'memory',
      rows,
      lookedUp,
      async get(ids: string[]) {
        lookedUp.push([...ids]);
        return ids.flatMap((id) => (rows.has(id) ? [rows.get(id)!] : []));
      },
      async insert(keys: StoredDataKey[]) {
        const inserted = new Set<string>();
        for (const key of keys) {
          if (rows.has(key.guestId)) continue;
          rows.set(key.guestId, key);
          inserted.add(key.guestId);
        }
        return inserted;
      },
      async erase(id: string, at: string) {
        rows.set(id, { guestId: id, createdAt: at, erasedAt: at });
      },
      async oneWrappedUnder(masterKeyId: string) {
        return [...rows.values()].find((row) => row.wrapped && row.masterKeyId === masterKeyId);
      },
      async wrappedUnder() {
        return [];
      },
      async countWrappedOutside() {
        return [];
      },
      async rewrap() {},
      async purgeDeleted() {},
      async close() {},
    };
  }

  it('gives cached, stored, new and no keys as before: new guests are not looked up, an erased one gets no key, a lost insert reads the stored row', async () => {
    const store = memoryKeys();
    const keys = new DataKeys(store, master);
    const [cached, stored, erased, fresh, unknown] = ['cached', 'stored', 'erased', 'fresh', 'unknown'];
    const first = await keys.keysFor([cached!], true);
    // Another writer's key for `stored`, and a tombstone for `erased`.
    const other = new DataKeys(store, master);
    const storedKey = (await other.keysFor([stored!], true)).get(stored!)!;
    await store.erase(erased!, new Date().toISOString());
    store.lookedUp.length = 0;

    const result = await keys.keysFor(new Set([cached!, stored!, erased!, fresh!]), true, new Set([fresh!, erased!]));
    expect(result.get(cached!)).toEqual(first.get(cached!));
    expect(result.get(stored!)).toEqual(storedKey);
    // `erased` was taken for new: its insert lost to the tombstone, which wins.
    expect(result.get(erased!)).toBeNull();
    expect(result.get(fresh!)).toHaveLength(32);
    expect(store.rows.get(fresh!)?.wrapped).toBeTruthy();
    expect(store.lookedUp).toEqual([[stored!], [erased!]]);

    // Without `create`: a guest with no row has no key and gets none.
    const read = await keys.keysFor([unknown!, fresh!], false);
    expect(read.get(unknown!)).toBeNull();
    expect(read.get(fresh!)).toEqual(result.get(fresh!));
    expect(store.rows.has(unknown!)).toBe(false);
    // A new reader opens the stored keys (they were wrapped under the master key).
    const reader = new DataKeys(store, master);
    const again = await reader.keysFor([fresh!, stored!, erased!], false);
    expect(again.get(fresh!)).toEqual(result.get(fresh!));
    expect(again.get(stored!)).toEqual(storedKey);
    expect(again.get(erased!)).toBeNull();
  });
});
