/**
 * Issue 14, item 5 (cost, scans): a door scan decides on plus-ones, blocks, validity and whether
 * the guest is inside, none of which is personal data, so its command reads the guest's stream
 * with `personalData: false` and the codec leaves the sealed fields out instead of reading the
 * guest's key and decrypting them. These tests hold what must not change with that: the codec
 * gives nothing personal and reads no key for such a read, a normal read still opens everything,
 * and a fold made without the fields is never what a command that needs them decides on.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { NewEvent } from '../../src/adapters/eventstore/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedKeyStore } from '../../src/adapters/keystore/embedded.js';
import { guestStream } from '../../src/domain/guest.js';
import { handleCommand } from '../../src/commands/handle-command.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { sealedEventStore } from '../../src/personal-data/sealed-event-store.js';
import { keyringOf } from '../../src/shared/encryption.js';
import { createClient, startTestService } from '../support/service.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const CLIENT = 'client-1';
const metadata = () => ({ tenantId: CLIENT, actor: { type: 'client' as const, id: CLIENT }, correlationId: randomUUID(), occurredAt: new Date().toISOString() });

describe('reading a stream without its personal data (ReadStreamOptions.personalData false)', () => {
  it('leaves the sealed fields out and reads no key; a normal read opens them; the command loop decides a command that needs them on a fresh read, not on such a fold', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-withheld-'));
    dirs.push(dir);
    const file = path.join(dir, 'events.sqlite');
    const master = keyringOf([{ id: 'm1', key: randomBytes(32) }]);
    const guestId = randomUUID();
    const stream = guestStream(CLIENT, guestId);
    const registered: NewEvent = {
      id: randomUUID(),
      type: 'GuestRegistered',
      data: { guestId, eventId: 'e-1', clientId: CLIENT, firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', barcode: 'ADA-1', plusOnes: 2, isGroup: false, tags: [] },
      metadata: metadata(),
    };
    const writer = new SqliteEventStore(file, { synchronous: 'FULL' });
    await sealedEventStore(writer, new DataKeys(EmbeddedKeyStore.inEventStore(writer), master)).append(stream, [registered], 'no_stream');
    await writer.close();

    // Another process: no cached key, no cached plaintext.
    const events = new SqliteEventStore(file, { synchronous: 'FULL' });
    try {
      const keyStore = new EmbeddedKeyStore(events.connection);
      const keys = new DataKeys(keyStore, master);
      const keysFor = vi.spyOn(keys, 'keysFor');
      const keyReads = vi.spyOn(keyStore, 'get');
      const reader = sealedEventStore(events, keys);

      const [withheld] = await reader.readStream(stream, { personalData: false });
      expect(withheld!.data).toEqual({ guestId, eventId: 'e-1', clientId: CLIENT, plusOnes: 2, isGroup: false, tags: [] });
      expect(JSON.stringify(withheld)).not.toMatch(/Ada|Lovelace|ada@example|ADA-1|personalData/);
      expect(keysFor).not.toHaveBeenCalled();
      expect(keyReads).not.toHaveBeenCalled();

      const [opened] = await reader.readStream(stream);
      expect(opened!.data).toEqual(registered.data);
      expect(keyReads).toHaveBeenCalledTimes(1);

      // The command loop: a fold made without personal data is cached as such, and a command
      // that needs personal data reads the stream again instead of deciding on it.
      const seen: string[] = [];
      const decider = {
        initialState: () => [] as string[],
        evolve: (names: string[], event: { type: string; data: unknown }) => [...names, String((event.data as { firstName?: string }).firstName ?? '-')],
        decide: (_command: unknown, names: string[]) => {
          seen.push(names.join(','));
          return [{ type: 'GuestNoted', data: { guestId } }];
        },
      };
      const context = { tenantId: CLIENT, actor: { type: 'client' as const, id: CLIENT }, correlationId: randomUUID(), now: new Date() };
      await handleCommand(reader, decider, stream, {}, context, { personalData: false });
      await handleCommand(reader, decider, stream, {}, context);
      await handleCommand(reader, decider, stream, {}, context);
      await handleCommand(reader, decider, stream, {}, context, { personalData: false });
      expect(seen).toEqual(['-', 'Ada,-', 'Ada,-,-', 'Ada,-,-,-']);
    } finally {
      await events.close();
    }
  });
});

describe('the door decides without personal data', () => {
  it('admits with the right plus-ones, answers the guest by name, and a later upsert of the same details changes nothing', async () => {
    const service = await startTestService();
    try {
      const client = await createClient(service);
      const eventId = `door-${randomUUID()}`;
      expect((await client.call('POST', '/checkin/v1/api/event', { id: eventId, title: 'Door', startTime: '2026-01-01T10:00:00Z', endTime: '2027-12-01T12:00:00Z' })).status).toBe(200);
      const guest = { firstName: 'Grace', lastName: 'Hopper', email: 'grace@example.com', barcode: 'GRACE-1', customId: 'crm-grace', plusOnes: 2, additionalInfo: 'table 4' };
      const created = await client.call('POST', `/checkin/v1/api/guests/${eventId}`, [guest]);
      expect(created.status).toBe(200);
      const guestId = created.body[0].id as string;

      const first = await client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'GRACE-1', plusOnes: 1 });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 1, plusOnesLeft: 1, guest: { id: guestId, firstName: 'Grace', lastName: 'Hopper' } });
      const second = await client.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { barcode: 'GRACE-1', plusOnes: 5 });
      expect(second.body).toMatchObject({ result: 'admitted', plusOnesAdmitted: 1, plusOnesLeft: 0 });

      // The upsert decides on the whole stream (it would take every personal field for a change otherwise).
      const upsert = await client.call('PUT', `/checkin/v1/api/guests/${eventId}/upsert`, [guest]);
      expect(upsert.status).toBe(204);
      const stored = await service.services.eventStore.readStream(guestStream(client.id, guestId));
      expect(stored.map((e) => e.type)).not.toContain('GuestDetailsChanged');
      const read = await client.call('GET', `/checkin/v1/api/guest/${guestId}`);
      expect(read.body).toMatchObject({ firstName: 'Grace', email: 'grace@example.com', additionalInfo: 'table 4', admittedPlusOnes: 2 });
    } finally {
      await service.close();
    }
  });
});
