import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConcurrencyError, type EventStore, type NewEvent, type SubscriptionBatch } from '../../src/adapters/eventstore/port.js';

const metadata = {
  tenantId: 'tenant-a',
  actor: { type: 'system' as const, id: 'test' },
  correlationId: 'corr-1',
  occurredAt: '2026-11-21T10:00:00.000Z',
};

export const newEvent = (type = 'Happened', data: Record<string, unknown> = {}): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata,
});

/** Reads a subscription until `until` says stop or the timeout passes. */
export async function collect(
  subscription: AsyncIterable<SubscriptionBatch> & { stop(): Promise<void> },
  until: (events: { id: string; position: number; streamName: string; type: string }[]) => boolean,
  timeoutMs = 10_000,
) {
  const seen: { id: string; position: number; streamName: string; type: string }[] = [];
  const timer = setTimeout(() => void subscription.stop(), timeoutMs);
  try {
    for await (const batch of subscription) {
      seen.push(...batch.events);
      if (until(seen)) break;
    }
  } finally {
    clearTimeout(timer);
    await subscription.stop();
  }
  return seen;
}

/**
 * The event store port's promises, for every adapter.
 * `makeStore` may be called several times for one file to simulate a restart.
 */
export function eventStoreContract(name: string, makeStore: () => Promise<EventStore>) {
  describe(`event store contract: ${name}`, () => {
    const stream = (category = 'test') => `${category}-${randomUUID()}`;

    it('appends to a new stream with no_stream and reads it forwards and backwards', async () => {
      const store = await makeStore();
      const s = stream();
      const events = [newEvent('A', { n: 1 }), newEvent('B', { n: 2 }), newEvent('C', { n: 3 })];
      const result = await store.append(s, events, 'no_stream');
      expect(result.nextRevision).toBe(2);
      const forwards = await store.readStream(s);
      expect(forwards.map((e) => [e.type, e.revision, e.data.n])).toEqual([
        ['A', 0, 1],
        ['B', 1, 2],
        ['C', 2, 3],
      ]);
      expect(forwards[0]!.metadata).toEqual(metadata);
      expect(forwards[2]!.position).toBe(result.position);
      expect(forwards[0]!.position).toBeLessThan(forwards[1]!.position);
      const backwards = await store.readStream(s, { direction: 'backwards', maxCount: 2 });
      expect(backwards.map((e) => e.type)).toEqual(['C', 'B']);
      const fromOne = await store.readStream(s, { fromRevision: 1 });
      expect(fromOne.map((e) => e.type)).toEqual(['B', 'C']);
    });

    it('reads a missing stream as empty', async () => {
      const store = await makeStore();
      expect(await store.readStream(stream())).toEqual([]);
    });

    it('checks the expected revision and raises the typed conflict without writing', async () => {
      const store = await makeStore();
      const s = stream();
      await store.append(s, [newEvent()], 'no_stream');
      await expect(store.append(s, [newEvent()], 'no_stream')).rejects.toBeInstanceOf(ConcurrencyError);
      await expect(store.append(s, [newEvent(), newEvent()], 5)).rejects.toBeInstanceOf(ConcurrencyError);
      await expect(store.append(stream(), [newEvent()], 0)).rejects.toBeInstanceOf(ConcurrencyError);
      await expect(store.append(stream(), [newEvent()], 'stream_exists')).rejects.toBeInstanceOf(ConcurrencyError);
      expect(await store.readStream(s)).toHaveLength(1);
      await store.append(s, [newEvent()], 0);
      await store.append(s, [newEvent()], 'any');
      await store.append(s, [newEvent()], 'stream_exists');
      expect(await store.readStream(s)).toHaveLength(4);
    });

    it('lets exactly one of two racing appends on the same revision win', async () => {
      const store = await makeStore();
      const s = stream();
      await store.append(s, [newEvent()], 'no_stream');
      const racers = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) => store.append(s, [newEvent('Raced', { i })], 0)),
      );
      const won = racers.filter((r) => r.status === 'fulfilled');
      const lost = racers.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(7);
      for (const loser of lost) expect(loser.reason).toBeInstanceOf(ConcurrencyError);
      expect(await store.readStream(s)).toHaveLength(2);
    });

    it('appends to several streams at once, and a conflict on one writes none (embedded) or is typed (all)', async () => {
      const store = await makeStore();
      const [a, b, c] = [stream(), stream(), stream()];
      await store.append(b, [newEvent('B0')], 'no_stream');
      const results = await store.appendMany([
        { streamName: a, events: [newEvent('A0')], expectedRevision: 'no_stream' },
        { streamName: b, events: [newEvent('B1')], expectedRevision: 0 },
      ]);
      expect(results.map((r) => r.nextRevision)).toEqual([0, 1]);
      expect(results[0]!.position).toBeLessThan(results[1]!.position);
      const conflicting = store.appendMany([
        { streamName: c, events: [newEvent('C0')], expectedRevision: 'no_stream' },
        { streamName: b, events: [newEvent('B2')], expectedRevision: 0 },
      ]);
      await expect(conflicting).rejects.toBeInstanceOf(ConcurrencyError);
      expect(await store.readStream(b)).toHaveLength(2);
      if (store.kind === 'sqlite') expect(await store.readStream(c)).toEqual([]);
    });

    it('treats a re-append of an already stored event id as a no-op', async () => {
      const store = await makeStore();
      const s = stream();
      const event = newEvent('Once');
      const first = await store.append(s, [event], 'no_stream');
      const again = await store.append(s, [event], 'no_stream');
      expect(again.position).toBe(first.position);
      expect(await store.readStream(s)).toHaveLength(1);
    });

    it('subscribes to all from a position with a stream-prefix filter', async () => {
      const store = await makeStore();
      const category = `cat${randomUUID().slice(0, 8)}`;
      const before = await store.headPosition();
      const wanted = stream(category);
      await store.append(wanted, [newEvent('W1')], 'no_stream');
      await store.append(stream('other'), [newEvent('O1')], 'no_stream');
      await store.append(wanted, [newEvent('W2')], 0);
      const seen = await collect(
        store.subscribeToAll({ fromPosition: before, filter: { streamPrefixes: [`${category}-`] } }),
        (events) => events.length >= 2,
      );
      expect(seen.map((e) => e.type)).toEqual(['W1', 'W2']);
      expect(seen.every((e) => e.streamName === wanted)).toBe(true);
    });

    it('delivers events appended after the subscription caught up (live)', async () => {
      const store = await makeStore();
      const category = `live${randomUUID().slice(0, 8)}`;
      const subscription = store.subscribeToAll({
        fromPosition: await store.headPosition(),
        filter: { streamPrefixes: [`${category}-`] },
      });
      const seen = collect(subscription, (events) => events.length >= 3);
      const s = stream(category);
      await new Promise((r) => setTimeout(r, 50));
      await store.append(s, [newEvent('L1')], 'no_stream');
      await store.append(s, [newEvent('L2'), newEvent('L3')], 0);
      expect((await seen).map((e) => e.type)).toEqual(['L1', 'L2', 'L3']);
    });

    it('resumes after a restart from its checkpoint, missing and repeating nothing', async () => {
      const first = await makeStore();
      const category = `resume${randomUUID().slice(0, 8)}`;
      const start = await first.headPosition();
      const s = stream(category);
      for (let i = 0; i < 10; i++) await first.append(s, [newEvent(`E${i}`)], i === 0 ? 'no_stream' : i - 1);
      const filter = { streamPrefixes: [`${category}-`] };
      // Process four events, remember the checkpoint, then "crash".
      const part = await collect(first.subscribeToAll({ fromPosition: start, filter, batchSize: 1 }), (e) => e.length >= 4);
      const checkpoint = part[3]!.position;
      await first.close();

      const restarted = await makeStore();
      for (let i = 10; i < 12; i++) await restarted.append(s, [newEvent(`E${i}`)], i - 1);
      const rest = await collect(restarted.subscribeToAll({ fromPosition: checkpoint, filter }), (e) => e.length >= 8);
      const types = [...part.slice(0, 4), ...rest].map((e) => e.type);
      expect(types).toEqual(Array.from({ length: 12 }, (_, i) => `E${i}`));
    });
  });
}
