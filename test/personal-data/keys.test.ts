/**
 * Issue 14, items 1 and 5: master-key rotation, and guests written before encryption (plaintext
 * events) keep working; what their erasure leaves is stated in docs/personal-data.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { clientToken, createClient, request, startTestService, type Client } from '../support/service.js';
import { dataKeyId } from '../../src/domain/personal-data.js';
import { customIdStream, legacyCustomIdStream, reservationDecider } from '../../src/domain/reservation.js';
import type { EventStore } from '../../src/adapters/eventstore/port.js';
import { EmbeddedKeyStore } from '../../src/adapters/keystore/embedded.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { keyringOf } from '../../src/shared/encryption.js';

const api = '/checkin/v1/api';
const dirs: string[] = [];
const newDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-pii-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

const key = () => randomBytes(32).toString('base64url');
const fileHolds = (file: string, text: string) => fs.existsSync(file) && fs.readFileSync(file).toString('latin1').includes(text);

/** A client made on the first start signs in again on the next (same data folder). */
async function signIn(url: string, client: Client): Promise<Client> {
  const token = await clientToken(url, client.id, client.clientSecret);
  return {
    ...client,
    token,
    call: (method, pathname, body, headers = {}) =>
      request(url, method, pathname, body, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey, ...headers }),
  };
}

describe('personal data keys', () => {
  it('rotation: keys re-wrapped under a new master key still open every guest once the old master key is gone', async () => {
    const dataDir = newDir();
    const [k1, k2] = [key(), key()];
    const first = await startTestService({ PII_MASTER_KEYS: `k1:${k1}` }, { dataDir });
    const client = await createClient(first);
    const eventId = (await client.call('POST', `${api}/event`, { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const id = (await client.call('POST', `${api}/guest`, { eventId, firstName: 'Rotated', email: 'rot@example.com' })).body.id;
    await first.close();

    const second = await startTestService({ PII_MASTER_KEYS: `k2:${k2},k1:${k1}`, PII_MASTER_KEY_ID: 'k2' }, { dataDir });
    expect(await second.platform.dataKeys!.rotate()).toBeGreaterThanOrEqual(1);
    expect(await second.platform.dataKeys!.rotate()).toBe(0);
    await second.close();

    const third = await startTestService({ PII_MASTER_KEYS: `k2:${k2}` }, { dataDir });
    try {
      const again = await signIn(third.url, client);
      const history = await again.call('GET', `${api}/guest/${id}/history`);
      expect(history.status).toBe(200);
      expect(history.body.events[0].data).toMatchObject({ firstName: 'Rotated', email: 'rot@example.com' });
    } finally {
      await third.close();
    }
  });

  it('a data key that does not open under the configured master key (same id, other value) fails naming the key id and what to set', async () => {
    const file = path.join(newDir(), 'keys.sqlite');
    const written = new DataKeys(new EmbeddedKeyStore(file), keyringOf([{ id: 'k1', key: randomBytes(32) }]));
    await written.keysFor(['c:g-1'], true);
    await written.store.close();
    const other = new DataKeys(new EmbeddedKeyStore(file), keyringOf([{ id: 'k1', key: randomBytes(32) }]));
    try {
      await expect(other.keysFor(['c:g-1'], false)).rejects.toThrow(/data key of c:g-1 does not open with master key "k1".*PII_MASTER_KEYS/);
    } finally {
      await other.store.close();
    }
  });

  it('a key wrapped under a master key no longer configured fails naming what the key is for, and the missing master key id', async () => {
    // The store holds more than guests' keys: the message named the customId stream-name key
    // "the data key of guest #customid-stream-names:n1" (seen on a start with the old master key removed).
    const file = path.join(newDir(), 'keys.sqlite');
    const written = new DataKeys(new EmbeddedKeyStore(file), keyringOf([{ id: 'k1', key: randomBytes(32) }]));
    await written.streamNameKey();
    await written.keysFor(['c:g-1', 'scan:c:s-1'], true);
    await written.store.close();
    const other = new DataKeys(new EmbeddedKeyStore(file), keyringOf([{ id: 'k2', key: randomBytes(32) }]));
    try {
      await expect(other.streamNameKey()).rejects.toThrow(/^the customId stream-name key \(#customid-stream-names:n1\) is wrapped under master key "k1", which is not in PII_MASTER_KEYS/);
      await expect(other.keysFor(['scan:c:s-1'], false)).rejects.toThrow(/^the data key of unmatched door scan scan:c:s-1 is wrapped under master key "k1"/);
      await expect(other.keysFor(['c:g-1'], false)).rejects.toThrow(/^the data key of guest c:g-1 is wrapped under master key "k1"/);
    } finally {
      await other.store.close();
    }
  });

  it('keys kept in their own file by an earlier version (personal-data-keys.sqlite) move into the event store file on start, tombstones included', async () => {
    const dataDir = newDir();
    const first = await startTestService({}, { dataDir });
    const client = await createClient(first);
    const eventId = (await client.call('POST', `${api}/event`, { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const kept = (await client.call('POST', `${api}/guest`, { eventId, firstName: 'Kept', email: 'kept@example.com' })).body.id;
    const erased = (await client.call('POST', `${api}/guest`, { eventId, firstName: 'Erased', email: 'erased@example.com' })).body.id;
    expect((await client.call('POST', `${api}/guest/${erased}/erase`, { reason: 'request' })).status).toBe(200);
    await first.close();

    // Lay the keys out as the earlier version did: their own file, none in events.sqlite.
    const events = new Database(path.join(dataDir, 'events.sqlite'));
    const rows = events.prepare('SELECT * FROM personal_data_keys').all() as Record<string, unknown>[];
    // Data keys are per client and guest (docs/personal-data.md).
    const keptKey = dataKeyId(client.id, kept)!;
    const erasedKey = dataKeyId(client.id, erased)!;
    // Beside them, the customId stream-name key (made on start: docs/personal-data.md).
    expect(rows.map((r) => r.guest_id).sort()).toEqual([keptKey, erasedKey, '#customid-stream-names:n1'].sort());
    events.exec('DELETE FROM personal_data_keys');
    events.close();
    const oldFile = path.join(dataDir, 'personal-data-keys.sqlite');
    const old = new Database(oldFile);
    old.exec('CREATE TABLE personal_data_keys (guest_id TEXT PRIMARY KEY, wrapped TEXT, master_key_id TEXT, created_at TEXT NOT NULL, erased_at TEXT) WITHOUT ROWID');
    const insert = old.prepare('INSERT INTO personal_data_keys VALUES (@guest_id, @wrapped, @master_key_id, @created_at, @erased_at)');
    for (const row of rows) insert.run(row);
    old.close();

    const second = await startTestService({}, { dataDir });
    try {
      expect(fs.existsSync(oldFile)).toBe(false);
      const again = await signIn(second.url, client);
      const history = await again.call('GET', `${api}/guest/${kept}/history`);
      expect(history.body.events[0].data).toMatchObject({ firstName: 'Kept', email: 'kept@example.com' });
      // The tombstone came along: the erased guest stays without a key, so its history stays sealed.
      const erasedHistory = await again.call('GET', `${api}/guest/${erased}/history`);
      expect(JSON.stringify(erasedHistory.body)).not.toContain('erased@example.com');
      const moved = await second.platform.dataKeys!.store.get([keptKey, erasedKey]);
      expect(moved.find((r) => r.guestId === erasedKey)).toMatchObject({ erasedAt: expect.any(String) });
      expect(moved.find((r) => r.guestId === keptKey)?.wrapped).toEqual(expect.any(String));
    } finally {
      await second.close();
    }
  });

  it('customId reservations of an earlier version (plaintext stream names) stay taken, and are released on a change of customId and on erasure', async () => {
    const dataDir = newDir();
    const before = await startTestService({ PII_ENCRYPTION: 'off' }, { dataDir });
    const client = await createClient(before);
    const event = { startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' };
    const eventId = (await client.call('POST', `${api}/event`, { title: 'Old', ...event })).body.id;
    const a = (await client.call('POST', `${api}/guest`, { eventId, firstName: 'A', customId: 'legacy-a@example.com' })).body.id;
    const b = (await client.call('POST', `${api}/guest`, { eventId, firstName: 'B', customId: 'legacy-b@example.com' })).body.id;
    // A reservation the read model does not show (its guest's projection lagging, a racer): only the stream says it is taken.
    const metadata = { tenantId: client.id, actor: { type: 'client' as const, id: client.id }, correlationId: 'c', occurredAt: new Date().toISOString() };
    const held = { key: 'held@example.com', ownerType: 'guest', ownerId: 'racer' };
    await before.platform.eventStore.append(legacyCustomIdStream(client.id, eventId, held.key), [{ id: randomUUID(), type: 'KeyReserved', data: held, metadata }], 'any');
    await before.close();
    expect(fileHolds(path.join(dataDir, 'events.sqlite'), 'legacy-a%40example.com') || fileHolds(path.join(dataDir, 'events.sqlite-wal'), 'legacy-a%40example.com')).toBe(true);

    const after = await startTestService({}, { dataDir });
    try {
      const again = await signIn(after.url, client);
      const holder = async (store: EventStore, stream: string) => {
        let state = reservationDecider.initialState();
        for (const e of await store.readStream(stream)) state = reservationDecider.evolve(state, e as never);
        return state.ownerId;
      };
      const nameKey = await after.platform.dataKeys!.streamNameKey();
      // Which streams the service reads: the legacy name only in an event older than the name key.
      const reads: string[] = [];
      const readStream = after.platform.eventStore.readStream.bind(after.platform.eventStore);
      after.platform.eventStore.readStream = async (stream, options) => (reads.push(stream), readStream(stream, options));
      const refused = await again.call('POST', `${api}/guest`, { eventId, firstName: 'Late', customId: 'HELD@example.com' });
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.code).toBe('custom_id_taken');
      expect(reads).toContain(legacyCustomIdStream(client.id, eventId, 'held@example.com'));

      expect((await again.call('PUT', `${api}/guests/${eventId}/upsert`, [{ id: a, customId: 'new-a@example.com' }])).status).toBe(204);
      expect(await holder(after.platform.eventStore, legacyCustomIdStream(client.id, eventId, 'legacy-a@example.com'))).toBeUndefined();
      expect(await holder(after.platform.eventStore, customIdStream(client.id, eventId, 'new-a@example.com', nameKey))).toBe(a);
      expect((await again.call('POST', `${api}/guest`, { eventId, firstName: 'Takes A', customId: 'legacy-a@example.com' })).status).toBe(200);

      expect((await again.call('POST', `${api}/guest/${b}/erase`, { reason: 'request' })).status).toBe(200);
      expect(await holder(after.platform.eventStore, legacyCustomIdStream(client.id, eventId, 'legacy-b@example.com'))).toBeUndefined();
      expect((await again.call('POST', `${api}/guest`, { eventId, firstName: 'Takes B', customId: 'legacy-b@example.com' })).status).toBe(200);

      // An event created since names are hashed has no legacy reservations: none is read there.
      const newEvent = (await again.call('POST', `${api}/event`, { title: 'New', ...event })).body.id;
      expect((await again.call('POST', `${api}/guest`, { eventId: newEvent, firstName: 'New', customId: 'held@example.com' })).status).toBe(200);
      expect(reads).not.toContain(legacyCustomIdStream(client.id, newEvent, 'held@example.com'));
      expect(await holder(after.platform.eventStore, customIdStream(client.id, newEvent, 'held@example.com', nameKey))).toEqual(expect.any(String));
    } finally {
      await after.close();
    }
  });

  it('a guest written before encryption (plaintext events) reads as before; its erasure scrubs the read models, the old events keep their plaintext', async () => {
    const dataDir = newDir();
    const before = await startTestService({ PII_ENCRYPTION: 'off' }, { dataDir });
    const client = await createClient(before);
    const eventId = (await client.call('POST', `${api}/event`, { title: 'Gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' })).body.id;
    const id = (await client.call('POST', `${api}/guest`, { eventId, firstName: 'Legacy', lastName: 'Plaintextson', email: 'legacy@example.com' })).body.id;
    await before.close();
    expect(fileHolds(path.join(dataDir, 'events.sqlite'), 'Plaintextson') || fileHolds(path.join(dataDir, 'events.sqlite-wal'), 'Plaintextson')).toBe(true);

    const after = await startTestService({}, { dataDir });
    try {
      const again = await signIn(after.url, client);
      expect((await again.call('GET', `${api}/guest/${id}`)).body).toMatchObject({ firstName: 'Legacy', lastName: 'Plaintextson' });
      // A change made now is sealed, and read back together with the plaintext past.
      expect((await again.call('PUT', `${api}/guests/${eventId}/upsert`, [{ id, otherNames: 'Sealedname' }])).status).toBe(204);
      const access = await again.call('GET', `${api}/guest/${id}/personal-data`);
      expect(access.body.guest).toMatchObject({ firstName: 'Legacy', otherNames: 'Sealedname' });
      const details = access.body.history.filter((e: { type: string }) => e.type === 'GuestRegistered' || e.type === 'GuestDetailsChanged');
      expect(details.map((e: { data: Record<string, unknown> }) => e.data.firstName ?? e.data.changes)).toEqual([
        'Legacy',
        { otherNames: 'Sealedname' },
      ]);

      const erased = await again.call('POST', `${api}/guest/${id}/erase`, { reason: 'request' });
      expect(erased.status).toBe(200);
      expect((await again.call('GET', `${api}/guest/${id}`)).body).toMatchObject({ erased: true, lastName: null, otherNames: null });
      await after.services.readStore.purgeDeleted?.();
      for (const file of ['read-models.sqlite', 'read-models.sqlite-wal']) expect(fileHolds(path.join(dataDir, file), 'Plaintextson')).toBe(false);
      // The sealed change is gone with the key; the events written in plaintext still hold it (docs/personal-data.md).
      for (const file of ['events.sqlite', 'events.sqlite-wal']) expect(fileHolds(path.join(dataDir, file), 'Sealedname')).toBe(false);
    } finally {
      await after.close();
    }
  });
});
