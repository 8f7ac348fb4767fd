/**
 * The personal-data codec answers a size check (EventStore.checkAppendSizes, EventStoreDB's
 * MaxAppendSize) for the events as it would store them, sealed, without a key or a cipher: the
 * size it gives must be the size of what it then stores, to the byte, or a batch could pass
 * the check before its intent and be refused after it (docs/eventstore.md, "Size of an append").
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { appendBytes, type EventStore, type NewEvent, type StreamAppend } from '../../src/adapters/eventstore/port.js';
import { SqliteEventStore } from '../../src/adapters/eventstore/sqlite.js';
import { EmbeddedKeyStore } from '../../src/adapters/keystore/embedded.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { sealedEventStore } from '../../src/personal-data/sealed-event-store.js';
import { keyringOf } from '../../src/shared/encryption.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-sealed-size-'));
const events = new SqliteEventStore(path.join(dir, 'events.sqlite'), { synchronous: 'FULL' });
afterAll(async () => {
  await events.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('weighs each append as it stores it: sealed personal fields (multi-byte text included) and the rest as given', async () => {
  const checked: number[] = [];
  // The store below the codec: what the codec asks it to weigh, next to what it stores.
  const measuring: EventStore = Object.assign(Object.create(events) as EventStore, {
    checkAppendSizes: (appends: StreamAppend[]) => checked.push(...appends.map((a) => appendBytes(a.events))),
  });
  const sealed = sealedEventStore(measuring, new DataKeys(EmbeddedKeyStore.inEventStore(events), keyringOf([{ id: 'm1', key: randomBytes(32) }])));
  const guestId = randomUUID();
  const stream = `guest-c1-${guestId}`;
  const metadata = { tenantId: 'c1', actor: { type: 'client' as const, id: 'c1' }, correlationId: randomUUID(), occurredAt: new Date().toISOString() };
  const appends: StreamAppend[] = [
    {
      streamName: stream,
      expectedRevision: 'no_stream',
      events: [{ id: randomUUID(), type: 'GuestRegistered', data: { guestId, eventId: 'e-1', firstName: 'Zoë ✓ 🎟', email: 'zoe@example.com', image: 'A'.repeat(5_001), plusOnes: 2 }, metadata }],
    },
    {
      streamName: stream,
      expectedRevision: 0,
      events: [{ id: randomUUID(), type: 'GuestDetailsChanged', data: { guestId, changes: { lastName: '"quoted" \\ name', plusOnes: 1 } }, metadata }] as NewEvent[],
    },
  ];
  for (const append of appends) {
    sealed.checkAppendSizes!([append]);
    await sealed.append(append.streamName, append.events, append.expectedRevision);
  }
  const stored = await events.readStream(stream);
  expect(stored.map((e) => typeof (e.data as { personalData?: unknown }).personalData)).toEqual(['object', 'object']);
  expect(checked).toEqual(stored.map((e) => appendBytes([e])));
});
