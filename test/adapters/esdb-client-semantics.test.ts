import { Readable } from 'node:stream';
import { ErrorType, type EventStoreDBClient } from '@eventstore/db-client';
import { unpackToCommandError } from '@eventstore/db-client/dist/streams/appendToStream/unpackError.js';
import { prepareStreamMetadata } from '@eventstore/db-client/dist/streams/utils/streamMetadata.js';
import { Status } from '@eventstore/db-client/generated/status_pb.js';
import { Any } from 'google-protobuf/google/protobuf/any_pb.js';
import { Empty } from 'google-protobuf/google/protobuf/empty_pb.js';
import { describe, expect, it } from 'vitest';
import { EsdbEventStore } from '../../src/adapters/eventstore/esdb.js';
import { AppendTooLargeError, StoreUnavailableError, type SubscriptionBatch } from '../../src/adapters/eventstore/port.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import { checkStoreIdentity } from '../../src/projections/store-identity.js';
import { createLogger } from '../../src/shared/logger.js';

/**
 * The EventStoreDB adapter's reading logic against a stand-in for @eventstore/db-client 6.x
 * (no server runs here): the client's subscription is an object-mode stream whose checkpoint
 * callback runs in order with the events (its Transform awaits it before taking the next
 * message), the client's reads have no deadline of their own, and `dispose()` cancels calls
 * without ending their streams. The real server runs the contract suite (docs/eventstore.md).
 */

type Item = { position: number; stream: string; type?: string } | { checkpoint: number } | 'end';

const resolved = (position: number, stream: string, type = 'Happened') => ({
  event: {
    id: `00000000-0000-4000-8000-${String(position).padStart(12, '0')}`,
    type,
    data: {},
    metadata: { tenantId: 't', actor: { type: 'system', id: 'x' }, correlationId: 'c', occurredAt: 'x', $correlationId: 'c' },
    streamId: stream,
    revision: 0n,
    created: new Date(0),
    position: { commit: BigInt(position), prepare: BigInt(position) },
  },
});

/** The client's subscription: items produced only when the reader asks (a paused gRPC stream). */
class FakeSubscription extends Readable {
  produced = 0;
  unsubscribed = false;
  private waiting = false;

  constructor(
    private readonly items: Item[],
    private readonly checkpointReached: ((s: unknown, p: { commit: bigint; prepare: bigint }) => void) | undefined,
    highWaterMark: number,
  ) {
    super({ objectMode: true, highWaterMark });
  }

  override _read(): void {
    for (;;) {
      const item = this.items.shift();
      if (item === undefined) {
        this.waiting = true; // live: nothing more for now
        return;
      }
      if (item === 'end') {
        this.push(null);
        return;
      }
      if ('checkpoint' in item) {
        this.checkpointReached?.(this, { commit: BigInt(item.checkpoint), prepare: BigInt(item.checkpoint) });
        continue;
      }
      this.produced += 1;
      this.push(resolved(item.position, item.stream, item.type));
      return;
    }
  }

  /** More from the server while live. */
  feed(...items: Item[]): void {
    this.items.push(...items);
    if (this.waiting) {
      this.waiting = false;
      this._read();
    }
  }

  async unsubscribe(): Promise<void> {
    this.unsubscribed = true;
  }
}

/** A client read: its events, or (`endless`) a server that never answers. */
function readable(events: unknown[], endless = false) {
  const stream = endless ? new Readable({ objectMode: true, read() {} }) : Readable.from(events, { objectMode: true });
  return Object.assign(stream, { cancel: async () => void stream.destroy() });
}

function fakeClient(all: { position: number; stream: string; type?: string }[], script: Item[] = []) {
  const subscriptions: FakeSubscription[] = [];
  const client = {
    subscribeToAll: (options: { filter?: { checkpointReached?: FakeSubscription['checkpointReached'] } }, readableOptions: { highWaterMark: number }) => {
      const subscription = new FakeSubscription([...script], options.filter?.checkpointReached, readableOptions.highWaterMark);
      subscriptions.push(subscription);
      return subscription;
    },
    readAll: (options: { fromPosition: 'end' | { commit: bigint }; maxCount: number }) => {
      // Backwards from a position, that position excluded, as the server reads (AllReader.cs,
      // ReadAllEventsBackwardInternal: an event at or after the position is skipped).
      const below = options.fromPosition === 'end' ? Number.POSITIVE_INFINITY : Number(options.fromPosition.commit);
      const page = all.filter((e) => e.position < below).sort((a, b) => b.position - a.position).slice(0, options.maxCount);
      return readable(page.map((e) => resolved(e.position, e.stream, e.type)));
    },
    readStream: () => readable([], true),
    dispose: async () => {},
  };
  return { client: client as unknown as EventStoreDBClient, subscriptions };
}

async function take(iterator: AsyncIterator<SubscriptionBatch>): Promise<SubscriptionBatch> {
  const next = await iterator.next();
  if (next.done) throw new Error('the iterator ended');
  return next.value;
}

describe('EventStoreDB adapter reading logic (client stand-in)', () => {
  it('moves to a checkpoint only once every event before it was handed out', async () => {
    const { client } = fakeClient([], [
      { position: 10, stream: 'want-1' },
      { position: 20, stream: 'want-1' },
      { checkpoint: 50 },
    ]);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client });
    const subscription = store.subscribeToAll({ filter: { streamPrefixes: ['want-'] }, batchSize: 1 });
    const iterator = subscription[Symbol.asyncIterator]();
    const first = await take(iterator);
    expect(first.events.map((e) => e.position)).toEqual([10]);
    expect(first.position).toBe(10);
    const second = await take(iterator);
    expect(second.events.map((e) => e.position)).toEqual([20]);
    expect(second.events[0]!.metadata).not.toHaveProperty('$correlationId');
    // The checkpoint comes with this batch or the next one, never before the events it covers.
    const last = second.position === 50 ? second : await take(iterator);
    expect(last.position).toBe(50);
    expect(last === second || last.events.length === 0).toBe(true);
    await subscription.stop();
  });

  it('reports progress past skipped events at a checkpoint with an empty batch', async () => {
    const { client } = fakeClient([], [{ position: 5, stream: 'other-1' }, { checkpoint: 7 }]);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client });
    const subscription = store.subscribeToAll({ filter: { streamPrefixes: ['want-'] } });
    const iterator = subscription[Symbol.asyncIterator]();
    expect(await take(iterator)).toEqual({ events: [], position: 7 });
    await subscription.stop();
  });

  it('pulls from the client only as the consumer reads (bounded buffer)', async () => {
    const script: Item[] = Array.from({ length: 10_000 }, (_, i) => ({ position: i + 1, stream: 'want-1' }));
    const { client, subscriptions } = fakeClient([], script);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client });
    const subscription = store.subscribeToAll({ filter: { streamPrefixes: ['want-'] }, batchSize: 100 });
    const iterator = subscription[Symbol.asyncIterator]();
    const first = await take(iterator);
    expect(first.events).toHaveLength(100);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Produced: the batch handed out plus at most a buffer's worth, not the 10,000 on offer.
    expect(subscriptions[0]!.produced).toBeLessThanOrEqual(300);
    await subscription.stop();
  });

  it('ends the iterator when the client stream ends, and when stopped while live', async () => {
    const { client, subscriptions } = fakeClient([], [{ position: 1, stream: 'want-1' }, 'end']);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client });
    const ended = store.subscribeToAll({ filter: { streamPrefixes: ['want-'] } });
    const seen: number[] = [];
    for await (const batch of ended) seen.push(...batch.events.map((e) => e.position));
    expect(seen).toEqual([1]);

    const { client: live, subscriptions: liveSubs } = fakeClient([], []);
    const liveStore = new EsdbEventStore('esdb://localhost:2113?tls=false', { client: live });
    const subscription = liveStore.subscribeToAll({ filter: { streamPrefixes: ['want-'] } });
    const reading = (async () => {
      const got: number[] = [];
      for await (const batch of subscription) got.push(...batch.events.map((e) => e.position));
      return got;
    })();
    liveSubs[0]!.feed({ position: 3, stream: 'want-2' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await subscription.stop();
    expect(await reading).toEqual([3]);
    expect(liveSubs[0]!.unsubscribed).toBe(true);
    expect(liveSubs[0]!.destroyed).toBe(true);
    expect(subscriptions[0]!.destroyed).toBe(true);
  });

  it('ends open subscriptions on close (the client’s dispose cancels calls without ending them)', async () => {
    const { client, subscriptions } = fakeClient([], []);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client });
    const subscription = store.subscribeToAll({ filter: { streamPrefixes: ['want-'] } });
    const reading = (async () => {
      for await (const _batch of subscription) {
        // nothing arrives
      }
      return 'ended';
    })();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await store.close();
    expect(await reading).toBe('ended');
    expect(subscriptions[0]!.destroyed).toBe(true);
  });

  it('finds the filtered head below system events and streams nobody reads, page by page', async () => {
    const all = [
      { position: 1, stream: 'want-1' },
      ...Array.from({ length: 100 }, (_, i) => ({ position: 2 + i, stream: i % 2 ? '$stats-1' : 'other-1', type: i % 2 ? '$statsCollected' : 'Noise' })),
    ];
    const { client } = fakeClient(all);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client });
    expect(await store.headPosition({ streamPrefixes: ['want-'] })).toBe(1);
    expect(await store.headPosition()).toBe(100); // the last event that is not the server's own
    expect(await store.headPosition({ streamPrefixes: ['none-'] })).toBe(-1);
  });

  it("keeps a checkpoint the server reported at its own event, past our last one, as this store's", async () => {
    // EventStoreDB 24.10 counts every committed event towards a filtered subscription's live
    // checkpoint and reports the position of the event it reached, whatever stream it is in
    // (SubscriptionsService.cs, ProcessEventCommited: `CheckpointIntervalCurrent++` outside the
    // filter, `CheckpointReached(..., pair.OriginalPosition)`); the standard projections write
    // `$>` links to `$ce-`/`$bc-` streams after our events. So the checkpoint a projection stores
    // can be past the last event that is not the server's own.
    const all = [
      { position: 1, stream: 'guest-1' },
      { position: 2, stream: '$bc-c', type: '$>' },
      { position: 3, stream: '$ce-guest', type: '$>' },
    ];
    const { client } = fakeClient(all, [{ position: 1, stream: 'guest-1' }, { checkpoint: 3 }]);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client });
    const subscription = store.subscribeToAll({ filter: { streamPrefixes: ['guest-'] } });
    const iterator = subscription[Symbol.asyncIterator]();
    let batch = await take(iterator);
    while (batch.position < 3) batch = await take(iterator);
    await subscription.stop();
    expect(await store.headPosition()).toBe(1);
    const readStore = new EmbeddedReadStore(':memory:');
    try {
      await readStore.setCheckpoint('projection:guests', batch.position);
      // Before: "checkpoints ahead of this event store's head 1" and the service refused to start
      // (with READ_STORE_MISMATCH=rebuild it dropped every read model).
      const check = {
        eventStore: store,
        readStore,
        eventStoreDescription: 'EventStoreDB (stand-in)',
        readStoreDescription: 'memory',
        projections: [],
        otherCheckpoints: ['projection:guests'],
        rebuildOnMismatch: false,
        logger: createLogger('silent'),
      };
      expect(await checkStoreIdentity(check)).toEqual({ recorded: true, rebuilt: false });
      // A checkpoint past the store's last event, its own included, is still refused.
      await readStore.setCheckpoint('projection:guests', 4);
      await expect(checkStoreIdentity(check)).rejects.toThrow(/ahead of this event store's last event 3/);
    } finally {
      await readStore.close();
    }
  });

  it('gives a read that never answers a deadline, as a retryable StoreUnavailableError', async () => {
    const { client } = fakeClient([]);
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client, readDeadlineMs: 50 });
    const failure = await store.readStream('any-1').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(failure).toMatchObject({ reason: 'deadline_exceeded', retryable: true });
  });
});

describe('EventStoreDB adapter: the size of an append (MaxAppendSize)', () => {
  const event = (bytes: number) => ({
    id: '00000000-0000-4000-8000-000000000001',
    type: 'Happened',
    data: { text: 'x'.repeat(bytes) },
    metadata: { tenantId: 't', actor: { type: 'system' as const, id: 'x' }, correlationId: 'c', occurredAt: 'x' },
  });
  /** A client whose appends are recorded, or fail with `failure`. */
  const writingClient = (failure?: unknown) => {
    const appended: unknown[][] = [];
    const client = {
      appendToStream: async (_stream: string, events: unknown[]) => {
        if (failure) throw failure;
        appended.push(events);
        return { nextExpectedRevision: 0n, position: { commit: 1n, prepare: 1n } };
      },
      dispose: async () => {},
    };
    return { client: client as unknown as EventStoreDBClient, appended };
  };

  it('refuses an append over the limit before sending it, counting data, metadata as sent and type', async () => {
    const { client, appended } = writingClient();
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client, maxAppendBytes: 2_000 });
    await store.append('s-1', [event(1_000)], 'any');
    expect(appended).toHaveLength(1);
    const error = await store.append('s-1', [event(1_000), event(1_000)], 'any').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppendTooLargeError);
    expect(error).toMatchObject({ streamName: 's-1', limit: 2_000 });
    // Two events of 1,000 characters, each with its metadata (the $correlationId fields included) and type.
    const sent = { ...event(1_000).metadata, $correlationId: 'c', $causationId: 'c' };
    expect((error as AppendTooLargeError).bytes).toBe(2 * (JSON.stringify(event(1_000).data).length + JSON.stringify(sent).length + 2 * 'Happened'.length));
    expect(appended).toHaveLength(1);
    expect(() => store.checkAppendSizes([{ streamName: 's-2', events: [event(3_000)], expectedRevision: 'any' }])).toThrow(AppendTooLargeError);
    expect(new EsdbEventStore('esdb://localhost:2113?tls=false', { client }).maxAppendBytes).toBe(1_048_576);
  });

  it("maps the server's own refusal (a MaxAppendSize lower than configured) to AppendTooLargeError", async () => {
    const refusal = Object.assign(new Error('Maximum Append Size of 1024 Exceeded.'), { type: ErrorType.MAXIMUM_APPEND_SIZE_EXCEEDED, maxAppendSize: 1024 });
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client: writingClient(refusal).client });
    const error = await store.append('s-1', [event(1_500)], 'any').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppendTooLargeError);
    expect(error).toMatchObject({ streamName: 's-1', limit: 1024, bytes: undefined });
  });
});

describe('EventStoreDB adapter: an append the server did not take', () => {
  const event = {
    id: '00000000-0000-4000-8000-000000000001',
    type: 'Happened',
    data: {},
    metadata: { tenantId: 't', actor: { type: 'system' as const, id: 'x' }, correlationId: 'c', occurredAt: 'x' },
  };
  const failingClient = (failure: unknown) =>
    ({
      appendToStream: async () => {
        throw failure;
      },
      dispose: async () => {},
    }) as unknown as EventStoreDBClient;

  // The 6.x client appends through BatchAppend (no call credentials). A server that is not ready,
  // too busy, or not the leader without leader info answers with a Status whose details are an
  // Empty (Streams.BatchAppend.cs, ConvertMessage of NotHandled, 24.10); the client's own
  // unpackToCommandError makes that an UnknownError. Nothing was written: retry later (503).
  for (const answer of ['Server Is Not Ready', 'Server Is Busy', 'No leader info available in response']) {
    it(`"${answer}" is a retryable StoreUnavailableError`, async () => {
      const status = new Status();
      const details = new Any();
      details.pack(new Empty().serializeBinary(), 'google.protobuf.Empty');
      status.setDetails(details);
      status.setMessage(answer);
      const failure = unpackToCommandError(status, 's-1');
      expect((failure as { type?: string }).type).toBe(ErrorType.UNKNOWN);
      const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client: failingClient(failure) });
      const error = await store.append('s-1', [event], 'no_stream').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ reason: 'unavailable', retryable: true });
    });
  }

  it('a call the server cancelled is a retryable StoreUnavailableError; another unknown error is left as it is', async () => {
    const cancelled = Object.assign(new Error('1 CANCELLED: Cancelled on server'), { type: ErrorType.CANCELLED });
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client: failingClient(cancelled) });
    expect(await store.append('s-1', [event], 'no_stream').catch((e: unknown) => e)).toMatchObject({ reason: 'unavailable', retryable: true });
    const unknown = Object.assign(new Error('something else'), { type: ErrorType.UNKNOWN });
    const other = new EsdbEventStore('esdb://localhost:2113?tls=false', { client: failingClient(unknown) });
    expect(await other.append('s-1', [event], 'no_stream').catch((e: unknown) => e)).toBe(unknown);
  });
});

describe('EventStoreDB adapter: $maxAge', () => {
  it("sets a stream's $maxAge keeping its other metadata, and writes nothing when it is already that", async () => {
    const written: { stream: string; metadata: Record<string, unknown> }[] = [];
    // As the server keeps it: the last `$metadata` event of `$$batchlog`, in its own field names.
    let stored: Record<string, unknown> = { $acl: { $r: ['$admins'] } };
    const client = {
      readStream: (streamName: string) => {
        const event = { ...resolved(1, streamName, '$metadata').event, data: stored, metadata: undefined, isJson: true };
        return readable(streamName === '$$batchlog' ? [{ event }] : []);
      },
      setStreamMetadata: async (stream: string, metadata: Record<string, unknown>) => {
        written.push({ stream, metadata });
        stored = prepareStreamMetadata(metadata);
        return { success: true, nextExpectedRevision: 0n, position: { commit: 1n, prepare: 1n } };
      },
      dispose: async () => {},
    };
    const store = new EsdbEventStore('esdb://localhost:2113?tls=false', { client: client as unknown as EventStoreDBClient });
    await store.setMaxAge('batchlog', 2_592_000);
    await store.setMaxAge('batchlog', 2_592_000);
    expect(written).toEqual([{ stream: 'batchlog', metadata: { acl: { readRoles: ['$admins'] }, maxAge: 2_592_000 } }]);
  });
});
