/**
 * Read-model documents whose arrays grow with every event stay bounded, so no document nears
 * MongoDB's 16 MB limit (an update past it fails, and the projection stops on it for good): an
 * invitation's `history` (one step per provider report, one report per open) and a webhook
 * delivery's `attemptLog` (a new budget of attempts per redelivery). Run through the projections
 * into the embedded store, and into MONGO_URL when set (FerretDB ignores `$slice`: the store
 * trims there itself).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/adapters/eventstore/port.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import { MongoReadStore } from '../../src/adapters/readstore/mongo.js';
import type { ReadStore, WriteOp } from '../../src/adapters/readstore/port.js';
import { DETAIL_LIMIT, HISTORY_LIMIT, invitationsProjection, type InvitationDoc } from '../../src/projections/invitations.js';
import { ATTEMPT_LOG_LIMIT, ERROR_LIMIT, webhookDeliveriesProjection } from '../../src/projections/webhooks.js';
import type { Projection } from '../../src/projections/projection.js';
import { MongoClient } from 'mongodb';

const url = process.env.MONGO_URL;
const dbName = `bounded_arrays_${Date.now()}_${process.pid}`;
const stores: [string, () => ReadStore][] = [['embedded', () => new EmbeddedReadStore(':memory:')]];
if (url) stores.push(['MongoDB protocol (MONGO_URL)', () => new MongoReadStore({ url, dbName })]);
afterAll(async () => {
  if (!url) return;
  const client = new MongoClient(url);
  await client.db(dbName).dropDatabase().catch(() => undefined);
  await client.close();
});

let position = 0;
const stored = (type: string, data: Record<string, unknown>, at: string): StoredEvent =>
  ({ id: `ev${++position}`, type, data, metadata: { occurredAt: at }, streamName: 's', revision: position, position, recordedAt: at }) as unknown as StoredEvent;

/** The events through the projection into the store, in batches as the runner hands them. */
async function project(store: ReadStore, projection: Projection, events: StoredEvent[]): Promise<void> {
  for (const collection of projection.collections) for (const index of collection.indexes) await store.collection(collection.name).createIndex(index);
  for (let i = 0; i < events.length; i += 250) {
    const batch = events.slice(i, i + 250);
    const ops: WriteOp[] = batch.flatMap((event) => projection.apply(event).map((op) => ({ ...op, position: event.position })));
    await store.applyBatch(ops, { name: `projection:${projection.name}:${dbName}`, position: batch[batch.length - 1]!.position });
  }
}

describe.each(stores)('bounded read-model arrays: %s', (_label, makeStore) => {
  it(`an invitation opened ${HISTORY_LIMIT + 300} times keeps its latest ${HISTORY_LIMIT} steps, counts every open, and cuts a long detail`, async () => {
    const store = makeStore();
    const ids = { attendeeInvitationId: `inv-${position}`, clientId: 'c1', attendeeId: 'g1', eventId: 'e1', templateId: 't1' };
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
    const events = [
      stored('SendRequested', { ...ids, requestedAt: at(0) }, at(0)),
      ...Array.from({ length: HISTORY_LIMIT + 300 }, (_, i) => stored('ProviderEventReceived', { ...ids, event: 'opened', providerEventId: `p${i}`, email: 'a@example.com', at: at(i + 1) }, at(i + 1))),
      stored('ProviderEventReceived', { ...ids, event: 'bounced', providerEventId: 'last', email: 'a@example.com', at: at(99_999), reason: 'x'.repeat(50_000) }, at(99_999)),
    ];
    await project(store, invitationsProjection, events);
    const doc = (await store.collection<InvitationDoc>('invitations').get(ids.attendeeInvitationId))!;
    expect(doc.opens).toBe(HISTORY_LIMIT + 300);
    expect(doc.history).toHaveLength(HISTORY_LIMIT);
    expect(doc.history[0]!.at).toBe(at(302));
    const last = doc.history[doc.history.length - 1]!;
    expect(last.type).toBe('bounced');
    expect(last.detail).toHaveLength(DETAIL_LIMIT);
    expect(last.detail!.endsWith('…')).toBe(true);
    await store.close();
  });

  it(`a webhook delivery attempted ${ATTEMPT_LOG_LIMIT + 50} times keeps its latest ${ATTEMPT_LOG_LIMIT} attempts, each error cut`, async () => {
    const store = makeStore();
    const deliveryId = `d-${position}`;
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
    const events = [
      stored('WebhookDeliveryScheduled', { deliveryId, clientId: 'c1', eventType: 'comms.sent', sourceEventId: 's1' }, at(0)),
      ...Array.from({ length: ATTEMPT_LOG_LIMIT + 50 }, (_, i) =>
        stored('WebhookDeliveryAttempted', { deliveryId, attempt: i + 1, attemptedAt: at(i + 1), url: 'https://example.com/hook', durationMs: 5, error: 'e'.repeat(i === ATTEMPT_LOG_LIMIT + 49 ? 20_000 : 10) }, at(i + 1)),
      ),
    ];
    await project(store, webhookDeliveriesProjection, events);
    const doc = (await store.collection<{ _id: string; attempts: number; attemptLog: { attempt: number; error?: string }[] }>('webhook_deliveries').get(deliveryId))!;
    expect(doc.attempts).toBe(ATTEMPT_LOG_LIMIT + 50);
    expect(doc.attemptLog.map((a) => a.attempt)).toEqual(Array.from({ length: ATTEMPT_LOG_LIMIT }, (_, i) => i + 51));
    expect(doc.attemptLog[ATTEMPT_LOG_LIMIT - 1]!.error).toHaveLength(ERROR_LIMIT);
    await store.close();
  });
});
