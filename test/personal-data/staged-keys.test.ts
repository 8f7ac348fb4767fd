/**
 * Issue 14, item 5 (cost): in the embedded store a new guest's data key is staged in memory and
 * written inside the append transaction of the first event sealed with it
 * (src/adapters/keystore/embedded.ts), and the codec serves the plaintext of events it just
 * sealed from a bounded cache (src/personal-data/sealed-event-store.ts). These tests hold the
 * guarantees that must survive that: a key row exists exactly when an event uses it, a key
 * stored first by another writer (or a tombstone) wins, and an erasure reaches the cache.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ConcurrencyError, type NewEvent, type StreamAppend } from '../../src/adapters/eventstore/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedKeyStore } from '../../src/adapters/keystore/embedded.js';
import { dataKeyId } from '../../src/domain/personal-data.js';
import { customIdStream } from '../../src/domain/reservation.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { ERASED_MARK, RecentlySealed, sealedEventStore } from '../../src/personal-data/sealed-event-store.js';
import { keyringOf, type Keyring } from '../../src/shared/encryption.js';
import { createClient, startTestService } from '../support/service.js';

const dirs: string[] = [];
const newFile = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-staged-'));
  dirs.push(dir);
  return path.join(dir, 'events.sqlite');
};
const stores: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const store of stores) await store.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const CLIENT = 'client-1';
const metadata = () => ({ tenantId: CLIENT, actor: { type: 'client' as const, id: CLIENT }, correlationId: randomUUID(), occurredAt: new Date().toISOString() });
const registered = (guestId: string, email: string): NewEvent => ({
  id: randomUUID(),
  type: 'GuestRegistered',
  data: { guestId, eventId: 'e-1', firstName: 'Ada', email, plusOnes: 0 },
  metadata: metadata(),
});
const sendStarted = (guestId: string, to: string): NewEvent => ({
  id: randomUUID(),
  type: 'SendStarted',
  data: { attendeeId: guestId, attendeeInvitationId: randomUUID(), to },
  metadata: metadata(),
});

/** A writer as createPlatform makes it: the key store in the event store's own file and transactions. */
function writer(file: string, master: Keyring) {
  const events = new SqliteEventStore(file, { synchronous: 'FULL' });
  stores.push(events);
  const keys = new DataKeys(EmbeddedKeyStore.inEventStore(events), master);
  return { events, keys, sealed: sealedEventStore(events, keys) };
}

/** Two writers of one file (two processes, as far as keys go), and a guest neither has written yet. */
function twoWriters() {
  const file = newFile();
  const master = keyringOf([{ id: 'm1', key: randomBytes(32) }]);
  const guestId = randomUUID();
  return { file, master, first: writer(file, master), second: writer(file, master), guestId, keyId: dataKeyId(CLIENT, guestId)! };
}

/** What another process sees from the file alone: no cached key, no cached plaintext. */
async function coldRead(file: string, master: Keyring, stream: string) {
  const events = new SqliteEventStore(file, { synchronous: 'FULL' });
  const keys = new EmbeddedKeyStore(events.connection);
  try {
    return await sealedEventStore(events, new DataKeys(keys, master)).readStream(stream);
  } finally {
    await events.close();
  }
}

const keyRows = (file: string, keyId: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT wrapped FROM personal_data_keys WHERE guest_id = ?').all(keyId) as { wrapped: string | null }[];
  } finally {
    db.close();
  }
};

describe('data keys written with the events that use them (embedded store)', () => {
  it('a new key is stored by the append of its first event, in the same transaction: a failed append stores neither', async () => {
    const file = newFile();
    const master = keyringOf([{ id: 'm1', key: randomBytes(32) }]);
    const { events, keys, sealed } = writer(file, master);
    const guestId = randomUUID();
    const keyId = dataKeyId(CLIENT, guestId)!;
    const taken = `guest-${CLIENT}:taken`;
    await events.append(taken, [{ id: randomUUID(), type: 'Other', data: {}, metadata: metadata() }], 'no_stream');

    // The guest's registration and a conflicting append in one batch: all or nothing.
    const batch: StreamAppend[] = [
      { streamName: `guest-${CLIENT}:${guestId}`, events: [registered(guestId, 'ada@example.com')], expectedRevision: 'no_stream' },
      { streamName: taken, events: [{ id: randomUUID(), type: 'Other', data: {}, metadata: metadata() }], expectedRevision: 'no_stream' },
    ];
    await expect(sealed.appendMany(batch)).rejects.toBeInstanceOf(ConcurrencyError);
    expect(keyRows(file, keyId)).toEqual([]);
    expect(await events.readStream(`guest-${CLIENT}:${guestId}`)).toEqual([]);
    // The key made for the failed try is still this process's: the retry stores it with its event.
    expect((await keys.keysFor([keyId], false)).get(keyId)).toBeInstanceOf(Buffer);

    await sealed.appendMany([batch[0]!]);
    expect(keyRows(file, keyId)).toHaveLength(1);
    const [stored] = await events.readStream(`guest-${CLIENT}:${guestId}`);
    expect(JSON.stringify(stored!.data)).not.toContain('ada@example.com');
    const [opened] = await coldRead(file, master, `guest-${CLIENT}:${guestId}`);
    expect(opened!.data).toMatchObject({ firstName: 'Ada', email: 'ada@example.com' });
  });

  it('a key another writer stored first wins: the staged one is dropped and the events are sealed again with the stored key', async () => {
    const { file, master, first, second, guestId, keyId } = twoWriters();
    // The second writer stages a key for the guest (a new invitation stream: no look-up first)…
    const invitation = `invitation-${randomUUID()}`;
    await second.keys.keysFor([keyId], true, new Set([keyId]));
    // …while the first stores the guest with a key of its own.
    await first.sealed.append(`guest-${CLIENT}:${guestId}`, [registered(guestId, 'grace@example.com')], 'no_stream');
    const stored = keyRows(file, keyId);
    expect(stored).toHaveLength(1);

    await second.sealed.append(invitation, [sendStarted(guestId, 'grace@example.com')], 'no_stream');
    expect(keyRows(file, keyId)).toEqual(stored);
    const [sent] = await coldRead(file, master, invitation);
    expect(sent!.data).toMatchObject({ to: 'grace@example.com' });
  });

  it('a staged key loses to a tombstone: a late write for an erased guest stores no personal data', async () => {
    const { file, master, first, second, guestId, keyId } = twoWriters();
    await first.sealed.append(`guest-${CLIENT}:${guestId}`, [registered(guestId, 'erased@example.com')], 'no_stream');
    await second.keys.keysFor([keyId], true, new Set([keyId]));
    await first.keys.erase(keyId, new Date().toISOString());

    const invitation = `invitation-${randomUUID()}`;
    await second.sealed.append(invitation, [sendStarted(guestId, 'erased@example.com')], 'no_stream');
    const [late] = await second.events.readStream(invitation);
    expect(late!.data).toMatchObject({ [ERASED_MARK]: true });
    expect(JSON.stringify(late!.data)).not.toContain('erased@example.com');
    expect(keyRows(file, keyId)).toEqual([{ wrapped: null }]);
  });

  it('a key staged for an append that never comes is not stored', async () => {
    const file = newFile();
    const { keys } = writer(file, keyringOf([{ id: 'm1', key: randomBytes(32) }]));
    const keyId = dataKeyId(CLIENT, randomUUID())!;
    expect((await keys.keysFor([keyId], true, new Set([keyId]))).get(keyId)).toBeInstanceOf(Buffer);
    expect(keyRows(file, keyId)).toEqual([]);
  });

  it('the stream-name key, which no event carries, is stored at once', async () => {
    const file = newFile();
    const { keys } = writer(file, keyringOf([{ id: 'm1', key: randomBytes(32) }]));
    await keys.streamNameKey();
    expect(keyRows(file, '#customid-stream-names:n1')).toHaveLength(1);
  });
});

describe('plaintext of events this process sealed', () => {
  it('is served to the reads that follow, and dropped when the guest is erased', async () => {
    const file = newFile();
    const { events, keys, sealed } = writer(file, keyringOf([{ id: 'm1', key: randomBytes(32) }]));
    const guestId = randomUUID();
    const stream = `guest-${CLIENT}:${guestId}`;
    const event = registered(guestId, 'cached@example.com');
    await sealed.append(stream, [event], 'no_stream');
    // Served from the cache: the very object appended, not a decryption of the stored row.
    const [read] = await sealed.readStream(stream);
    expect(read!.data).toBe(event.data);

    await keys.erase(dataKeyId(CLIENT, guestId)!, new Date().toISOString());
    const [after] = await sealed.readStream(stream);
    expect(after!.data).toMatchObject({ [ERASED_MARK]: true });
    expect(JSON.stringify(after!.data)).not.toContain('cached@example.com');
    expect(JSON.stringify(await events.readStream(stream))).not.toContain('cached@example.com');
  });

  it('an erasure through another thread of the process reaches this one at once (erasedElsewhere), not when the cache expires', async () => {
    const { first, second, guestId, keyId } = twoWriters();
    const stream = `guest-${CLIENT}:${guestId}`;
    await first.sealed.append(stream, [registered(guestId, 'thread@example.com')], 'no_stream');
    // The second writer (the workers' thread) has the key cached from a read.
    expect((await second.sealed.readStream(stream))[0]!.data).toMatchObject({ email: 'thread@example.com' });
    await first.keys.erase(keyId, new Date().toISOString());
    // Still cached there: without the message it would open the guest for up to a minute.
    expect((await second.sealed.readStream(stream))[0]!.data).toMatchObject({ email: 'thread@example.com' });

    const heard: string[] = [];
    second.keys.onErase((id) => heard.push(id));
    second.keys.erasedElsewhere(keyId);
    second.keys.erasedElsewhere(keyId); // the other side's echo: heard once
    const [after] = await second.sealed.readStream(stream);
    expect(after!.data).toMatchObject({ [ERASED_MARK]: true });
    expect(JSON.stringify(after!.data)).not.toContain('thread@example.com');
    expect(heard).toEqual([keyId]);
  });

  it('is bounded: the oldest entries go first', () => {
    const recent = new RecentlySealed(3);
    for (const id of ['a', 'b', 'c', 'd']) recent.remember(id, 'g', { id }, Date.now());
    expect(recent.size).toBe(3);
    expect(recent.opened('a', 'g')).toBeUndefined();
    expect(recent.opened('d', 'g')).toEqual({ id: 'd' });
    // Another key id (a ciphertext moved to another guest) is never answered from the cache.
    expect(recent.opened('d', 'other')).toBeUndefined();
    recent.forget('g');
    expect(recent.size).toBe(0);
  });
});

describe('customId reservations under a hashed stream name', () => {
  it('leave the customId out of their events: nothing personal to seal, the name stands for it', async () => {
    const service = await startTestService({});
    try {
      const client = await createClient(service);
      const eventId = (await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
      const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada', customId: 'crm-ada@example.com' });
      expect(guest.status).toBe(200);
      const nameKey = await service.platform.dataKeys!.streamNameKey();
      const stream = customIdStream(client.id, eventId, 'crm-ada@example.com', nameKey);
      const stored = await service.platform.sealedEventStore.readStream(stream);
      expect(stored.map((e) => e.type)).toEqual(['KeyReserved']);
      expect(stored[0]!.data).toEqual({ ownerType: 'guest', ownerId: guest.body.id });
      // A second guest cannot take it; the first gives it back by taking another.
      expect((await client.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Eve', customId: 'CRM-ADA@example.com' })).status).toBe(409);
      expect((await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [{ id: guest.body.id, customId: 'crm-2' }])).status).toBe(204);
      const released = await service.platform.sealedEventStore.readStream(stream);
      expect(released.map((e) => [e.type, e.data])).toEqual([
        ['KeyReserved', { ownerType: 'guest', ownerId: guest.body.id }],
        ['KeyReleased', { ownerId: guest.body.id }],
      ]);
    } finally {
      await service.close();
    }
  });
});
