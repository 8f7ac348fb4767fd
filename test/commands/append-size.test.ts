import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { appendBytes, type StoredEvent } from '../../src/adapters/eventstore/port.js';
import { batchLogStream, completeOpenBatches, intentPartsStream, intentRetentionSeconds } from '../../src/commands/batch-intents.js';
import { customIdStream } from '../../src/domain/reservation.js';
import type { StreamNameKey } from '../../src/domain/reservation.js';
import { DataKeys } from '../../src/personal-data/data-keys.js';
import { sealedEventStore } from '../../src/personal-data/sealed-event-store.js';
import { loadOrCreateKeyFile } from '../../src/shared/encryption.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { StreamByStreamStore } from '../support/stream-by-stream-store.js';

/**
 * EventStoreDB refuses an append larger than its `MaxAppendSize` (1 MiB by default; 64 kB
 * here, so that a few images reach it). The service must answer such a request with 413 and
 * change nothing, and a batch whose intent is larger than one append (200 guests with images)
 * must still be applied whole, its intent written in parts. docs/eventstore.md, "Size of an append".
 */

const limit = 64 * 1024;
let service: TestService;
let store: StreamByStreamStore;
let alice: Client;
let eventId: string;
let nameKey: StreamNameKey | undefined;

beforeAll(async () => {
  service = await startTestService({}, { wrapEventStore: (inner) => (store = new StreamByStreamStore(inner, limit)) });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  nameKey = await service.platform.dataKeys?.streamNameKey();
  eventId = (await alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' })).body.id;
});
afterAll(() => service.close());
beforeEach(() => store.restart());

/** base64 text of about `bytes` bytes, different per guest. */
const image = (bytes: number, seed: string) => Buffer.from(seed.repeat(Math.ceil(bytes / seed.length)).slice(0, bytes)).toString('base64');

/** The batch log as the service reads it (parts opened while their key exists). */
const batchLog = async () => (await service.platform.eventStore.readStream(batchLogStream)) as StoredEvent<string, Record<string, unknown>>[];

async function guestsWith(customIds: string[]) {
  const found = await Promise.all(customIds.map((customId) => alice.call('GET', `/checkin/v1/api/guest/${encodeURIComponent(customId)}`)));
  return found.filter((reply) => reply.status === 200).map((reply) => reply.body as { customId: string; image?: string });
}

describe('a batch whose intent is larger than one append of the event store', () => {
  it('is written in parts and applied whole: every guest with its image', async () => {
    const tag = randomUUID().slice(0, 8);
    const guests = Array.from({ length: 20 }, (_, i) => ({ firstName: `G${i}`, customId: `${tag}-${i}`, image: image(6_000, `${tag}${i}`) }));
    const batchesBefore = (await batchLog()).length;
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, guests);
    expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(200);

    const found = await guestsWith(guests.map((g) => g.customId));
    expect(found).toHaveLength(20);
    for (const guest of found) expect(guest.image).toBe(guests.find((g) => g.customId === guest.customId)!.image);

    const started = (await batchLog()).slice(batchesBefore).filter((e) => e.type === 'BatchStarted');
    expect(started).toHaveLength(1);
    const { batchId, parts, items } = started[0]!.data as { batchId: string; parts: number; items?: unknown };
    expect(items).toBeUndefined();
    expect(parts).toBeGreaterThan(1);
    // Each part fits one append as stored (sealed), and the batch's key is gone once it completed.
    const stored = await store.inner.readStream(intentPartsStream(batchId));
    expect(stored).toHaveLength(parts);
    for (const part of stored) expect(appendBytes([part])).toBeLessThanOrEqual(limit);
    // The store may drop the parts, and the batch log's intents, after a month (EventStoreDB's $maxAge).
    expect(store.maxAges.get(intentPartsStream(batchId))).toBe(intentRetentionSeconds);
    expect(store.maxAges.get(batchLogStream)).toBe(intentRetentionSeconds);
    const opened = await service.platform.eventStore.readStream(intentPartsStream(batchId));
    expect(opened.every((part) => part.data.personalDataErased === true && part.data.items === undefined)).toBe(true);
  });

  it('left unfinished by a writer that stopped between two parts: aborted by the completer, nothing applied, the customIds free', async () => {
    const tag = randomUUID().slice(0, 8);
    const guests = Array.from({ length: 20 }, (_, i) => ({ firstName: `H${i}`, customId: `${tag}-${i}`, image: image(6_000, `${tag}${i}`) }));
    // The header and the first part are stored, then the "process" dies.
    store.failAfter({ after: 2, mode: 'crash', counts: (stream) => stream.startsWith(batchLogStream) });
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, guests);
    expect(reply.status).toBe(500);
    store.restart();
    const started = (await batchLog()).filter((e) => e.type === 'BatchStarted').at(-1);
    const { batchId, parts } = started!.data as { batchId: string; parts: number };
    expect(parts).toBeGreaterThan(1);
    expect(await store.inner.readStream(intentPartsStream(batchId))).toHaveLength(1);

    // A completer that runs while the writer may still be at work leaves it alone.
    expect((await completeOpenBatches(service.platform.eventStore, { logger: service.services.logger, olderThanMs: 60_000 })).open).toBeGreaterThanOrEqual(1);
    await completeOpenBatches(service.platform.eventStore, { logger: service.services.logger, olderThanMs: 0 });
    const outcome = (await batchLog()).filter((e) => e.data.batchId === batchId).map((e) => [e.type, e.data.code]);
    expect(outcome).toEqual([
      ['BatchStarted', undefined],
      ['BatchAborted', 'intent_incomplete'],
      ['BatchReleased', undefined],
    ]);
    expect((await store.inner.readStream(intentPartsStream(batchId))).map((e) => e.type)).toEqual(['BatchIntentPart', 'BatchIntentAbandoned']);
    expect(await guestsWith(guests.map((g) => g.customId))).toEqual([]);
    // Nothing was claimed: the same guests go in now.
    const again = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, guests);
    expect(again.status, JSON.stringify(again.body).slice(0, 300)).toBe(200);
    expect(await guestsWith(guests.map((g) => g.customId))).toHaveLength(20);
  });

  it('abandoned by a completer while its writer is still at work: the writer starts the batch again and it is applied once', async () => {
    const tag = randomUUID().slice(0, 8);
    const guests = Array.from({ length: 20 }, (_, i) => ({ firstName: `K${i}`, customId: `${tag}-${i}`, image: image(6_000, `${tag}${i}`) }));
    let raced = false;
    store.beforeAppend = async (stream) => {
      // Before the writer's second part, a completer (in another process) gives up on the batch.
      if (raced || !stream.startsWith(intentPartsStream(''))) return;
      const [head] = await store.inner.readStream(stream, { direction: 'backwards', maxCount: 1 });
      if (!head) return;
      raced = true;
      await completeOpenBatches(service.platform.eventStore, { logger: service.services.logger, olderThanMs: 0 });
    };
    try {
      const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, guests);
      expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(200);
    } finally {
      store.beforeAppend = undefined;
    }
    expect(raced).toBe(true);
    const abandoned = (await batchLog()).filter((e) => e.type === 'BatchAborted' && e.data.code === 'intent_incomplete');
    expect(abandoned.length).toBeGreaterThanOrEqual(1);
    // The abandoned batch was never applied: its writer failed on its next part and started another.
    const log = await batchLog();
    for (const { data } of abandoned) expect(log.filter((e) => e.data.batchId === data.batchId).map((e) => e.type)).toEqual(['BatchStarted', 'BatchAborted', 'BatchReleased']);
    expect(log.filter((e) => e.type === 'BatchCompleted').length).toBeGreaterThanOrEqual(1);
    const found = await guestsWith(guests.map((g) => g.customId));
    expect(found).toHaveLength(20);
  });
});

describe('an append larger than the event store takes', () => {
  it('a batch with one guest too large: 413, and nothing of the batch is written', async () => {
    const tag = randomUUID().slice(0, 8);
    const before = (await batchLog()).length;
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'Small', customId: `${tag}-small` },
      { firstName: 'Large', customId: `${tag}-large`, image: image(60_000, tag) },
    ]);
    expect(reply.status).toBe(413);
    expect(reply.body.code).toBe('payload_too_large');
    expect(reply.body.message).toMatch(/nothing was changed/);
    expect((await batchLog()).length).toBe(before);
    expect(await guestsWith([`${tag}-small`, `${tag}-large`])).toEqual([]);
  });

  it('one guest too large: 413, not created', async () => {
    const id = randomUUID();
    const reply = await alice.call('POST', '/checkin/v1/api/guest', { id, eventId, firstName: 'Large', image: image(60_000, id) });
    expect(reply.status).toBe(413);
    expect(reply.body.code).toBe('payload_too_large');
    expect((await alice.call('GET', `/checkin/v1/api/guest/${id}`)).status).toBe(404);
  });

  it('a template too large: 413, not created', async () => {
    const before = (await alice.call('GET', '/comms/v1/api/comms/templates')).body;
    const reply = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Huge', subject: 'Hi', html: `<p>${'x'.repeat(70_000)}</p>` });
    expect(reply.status).toBe(413);
    expect((await alice.call('GET', '/comms/v1/api/comms/templates')).body).toEqual(before);
  });
});

describe('an aborted batch', () => {
  it('gives its claims back, then its intent key goes (BatchReleased): its items are unreadable', async () => {
    const tag = randomUUID().slice(0, 8);
    // A racer takes the second customId between the decision and the claim.
    const contested = customIdStream(alice.id, eventId, `${tag}-taken`, nameKey);
    store.beforeAppend = async (stream) => {
      if (stream !== contested) return;
      store.beforeAppend = undefined;
      await store.inner.append(stream, [{ id: randomUUID(), type: 'KeyReserved', data: { key: `${tag}-taken`, ownerType: 'guest', ownerId: 'racer' }, metadata: { tenantId: 'x', actor: { type: 'system', id: 'racer' }, correlationId: 'race', occurredAt: new Date().toISOString() } }], 'no_stream');
    };
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [
      { firstName: 'Free', email: `free-${tag}@example.com`, customId: `${tag}-free` },
      { firstName: 'Clash', customId: `${tag}-taken` },
    ]);
    store.beforeAppend = undefined;
    expect(reply.status).toBe(409);
    const log = await batchLog();
    const aborted = log.filter((e) => e.type === 'BatchAborted').at(-1)!;
    const batchId = aborted.data.batchId as string;
    expect(log.filter((e) => e.data.batchId === batchId).map((e) => e.type)).toEqual(['BatchStarted', 'BatchAborted', 'BatchReleased']);
    // The intent held the guests' data; its key is gone, so it opens to nothing.
    const intent = log.find((e) => e.type === 'BatchStarted' && e.data.batchId === batchId)!;
    expect(intent.data.personalDataErased).toBe(true);
    expect(JSON.stringify(intent.data)).not.toContain(tag);
    // The free customId was given back.
    expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Later', customId: `${tag}-free` })).status).toBe(200);
  });
});

describe('the batch completer of another process (nothing of the batch in its memory)', () => {
  it('reads the batch log without the sealed intents, and an open intent whole when it runs it', async () => {
    const tag = randomUUID().slice(0, 8);
    const guests = [{ firstName: 'One', customId: `${tag}-1` }, { firstName: 'Two', customId: `${tag}-2` }];
    // The intent is stored, then the writer dies.
    store.failAfter({ after: 1, mode: 'crash', counts: (stream) => stream === batchLogStream || stream.startsWith('guest') });
    expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, guests)).status).toBe(500);
    store.restart();
    const master = loadOrCreateKeyFile(path.join(service.platform.config.dataDir, 'personal-data', 'master-keys.json'));
    const elsewhere = sealedEventStore(service.platform.sealedEventStore, new DataKeys(service.platform.dataKeys!.store, master));
    const outcome = await completeOpenBatches(elsewhere, { logger: service.services.logger, olderThanMs: 0 });
    expect(outcome.completed).toBeGreaterThanOrEqual(1);
    expect((await guestsWith(guests.map((g) => g.customId))).map((g) => g.customId).sort()).toEqual([`${tag}-1`, `${tag}-2`]);
  });
});
