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
      // All or nothing only where the store says so; the command layer covers the others.
      if (store.atomicBatches) expect(await store.readStream(c)).toEqual([]);
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

    it('keeps the filtered head right as events are appended after it was asked (matching or not)', async () => {
      const store = await makeStore();
      const category = `later${randomUUID().slice(0, 8)}`;
      const filter = { streamPrefixes: [`${category}-`] };
      const first = await store.append(stream(category), [newEvent('Wanted')], 'no_stream');
      for (let i = 0; i < 20; i++) await store.append(stream('noise'), [newEvent('Noise')], 'no_stream');
      expect(await store.headPosition(filter)).toBe(first.position);
      for (let i = 0; i < 20; i++) await store.append(stream('noise'), [newEvent('Noise')], 'no_stream');
      expect(await store.headPosition(filter)).toBe(first.position);
      const second = await store.append(stream(category), [newEvent('Wanted')], 'no_stream');
      expect(await store.headPosition(filter)).toBe(second.position);
      for (let i = 0; i < 5; i++) await store.append(stream('noise'), [newEvent('Noise')], 'no_stream');
      expect(await store.headPosition(filter)).toBe(second.position);
      expect(await store.headPosition({ eventTypes: ['Wanted'], streamPrefixes: [`${category}-`] })).toBe(second.position);
    });

    it('reports progress that reaches the filtered head when the last events match no filter', async () => {
      const store = await makeStore();
      const category = `quiet${randomUUID().slice(0, 8)}`;
      const before = await store.headPosition();
      const wanted = await store.append(stream(category), [newEvent('Wanted')], 'no_stream');
      // The tail of the store: events nobody subscribed to (on EventStoreDB also its own system events).
      for (let i = 0; i < 40; i++) await store.append(stream('noise'), [newEvent('Noise')], 'no_stream');
      const filter = { streamPrefixes: [`${category}-`] };
      expect(await store.headPosition(filter)).toBe(wanted.position);
      expect(await store.headPosition()).toBeGreaterThan(wanted.position);
      expect(await store.headPosition({ streamPrefixes: [`absent${randomUUID().slice(0, 8)}-`] })).toBe(-1);
      // A subscription with that filter gets to the filtered head: "caught up", lag 0.
      const subscription = store.subscribeToAll({ fromPosition: before, filter });
      let reached = -1;
      const timer = setTimeout(() => void subscription.stop(), 10_000); // hang guard only
      for await (const batch of subscription) {
        reached = batch.position;
        if (reached >= wanted.position) break;
      }
      clearTimeout(timer);
      await subscription.stop();
      expect(reached).toBeGreaterThanOrEqual(wanted.position);
    });

    for (const mode of ['no_stream', 'exact revision'] as const) {
      it(`writes an event id once when it is appended again after a restart (${mode})`, async () => {
        const first = await makeStore();
        const s = stream();
        if (mode === 'exact revision') await first.append(s, [newEvent('Before')], 'no_stream');
        const expected = mode === 'no_stream' ? ('no_stream' as const) : 0;
        const event = newEvent('Once');
        const written = await first.append(s, [event], expected);
        await first.close();
        const restarted = await makeStore();
        // The same append again (a retry whose answer was lost), then once more after the stream moved on.
        const again = await restarted.append(s, [event], expected);
        expect(again.position).toBe(written.position);
        await restarted.append(s, [newEvent('After')], mode === 'no_stream' ? 0 : 1);
        await restarted.append(s, [event], expected);
        const stored = await restarted.readStream(s);
        expect(stored.filter((e) => e.id === event.id)).toHaveLength(1);
        expect(stored).toHaveLength(mode === 'no_stream' ? 2 : 3);
      });
    }

    it('answers a retried append with its own events\' revision, and a partly stored retry with a conflict', async () => {
      const store = await makeStore();
      const s = stream();
      const retried = [newEvent('One'), newEvent('Two')];
      const written = await store.append(s, retried, 'no_stream');
      await store.append(s, [newEvent('Later')], 1);
      // EventStoreDB answers a retry with the revision of the retried events: a command that caches
      // its fold at that revision then conflicts with 'Later' instead of deciding without it.
      const again = await store.append(s, retried, 'no_stream');
      expect(again).toEqual({ nextRevision: 1, position: written.position });
      await expect(store.append(s, [retried[0]!, newEvent('Three')], 'no_stream')).rejects.toBeInstanceOf(ConcurrencyError);
      expect((await store.readStream(s)).map((e) => e.type)).toEqual(['One', 'Two', 'Later']);
    });

    it('hands a slow consumer batches of at most batchSize, in order, missing and repeating nothing', async () => {
      const store = await makeStore();
      const category = `slow${randomUUID().slice(0, 8)}`;
      const before = await store.headPosition();
      const s = stream(category);
      for (let i = 0; i < 10; i++) {
        await store.append(s, Array.from({ length: 10 }, (_, j) => newEvent(`E${i * 10 + j}`)), i === 0 ? 'no_stream' : i * 10 - 1);
      }
      const subscription = store.subscribeToAll({ fromPosition: before, filter: { streamPrefixes: [`${category}-`] }, batchSize: 7 });
      const seen: string[] = [];
      const timer = setTimeout(() => void subscription.stop(), 10_000); // hang guard only
      for await (const batch of subscription) {
        expect(batch.events.length).toBeLessThanOrEqual(7);
        seen.push(...batch.events.map((e) => e.type));
        if (seen.length >= 100) break;
        await new Promise((resolve) => setTimeout(resolve, 5)); // a slow consumer
      }
      clearTimeout(timer);
      await subscription.stop();
      expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => `E${i}`));
    });

    it('ends the iterator when the subscription is stopped while waiting for events', async () => {
      const store = await makeStore();
      const subscription = store.subscribeToAll({ fromPosition: await store.headPosition(), filter: { streamPrefixes: [`never${randomUUID()}-`] } });
      const reading = (async () => {
        let batches = 0;
        for await (const _batch of subscription) batches += 1;
        return batches;
      })();
      await new Promise((resolve) => setTimeout(resolve, 50));
      await subscription.stop();
      await subscription.stop(); // idempotent
      await expect(reading).resolves.toEqual(expect.any(Number));
    });

    it('ends the iterator when the store closes under it', async () => {
      const store = await makeStore();
      const subscription = store.subscribeToAll({ fromPosition: await store.headPosition(), filter: { streamPrefixes: [`never${randomUUID()}-`] } });
      const reading = (async () => {
        try {
          for await (const _batch of subscription) {
            // nothing arrives
          }
          return 'ended';
        } catch {
          return 'failed';
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 50));
      await store.close();
      // Ended or failed, but never left waiting: a consumer then subscribes again.
      expect(['ended', 'failed']).toContain(await reading);
      await subscription.stop();
    });
  });
}
