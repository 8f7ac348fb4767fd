import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  excludeSystemEvents,
  FORWARDS,
  jsonEvent,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  eventTypeFilter,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type AppendExpectedRevision,
  type ResolvedEvent,
} from '@eventstore/db-client';
import {
  ConcurrencyError,
  matchesFilter,
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type StoredEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionBatch,
} from './port.js';

type Recorded = NonNullable<ResolvedEvent['event']> & { position?: { commit: bigint } };

const toStored = (recorded: Recorded, position: number): StoredEvent => ({
  id: recorded.id,
  type: recorded.type,
  data: recorded.data as Record<string, unknown>,
  metadata: recorded.metadata as unknown as EventMetadata,
  streamName: recorded.streamId,
  revision: Number(recorded.revision),
  position,
  recordedAt: recorded.created.toISOString(),
});

const toEsdbRevision = (expected: ExpectedRevision): AppendExpectedRevision =>
  expected === 'any' ? ANY : expected === 'no_stream' ? NO_STREAM : expected === 'stream_exists' ? STREAM_EXISTS : BigInt(expected);

/**
 * EventStoreDB adapter: a thin mapping of the port onto @eventstore/db-client.
 * Global position = the commit position in the transaction log.
 */
export class EsdbEventStore implements EventStore {
  readonly kind = 'eventstoredb';
  private readonly client: EventStoreDBClient;

  constructor(connectionString: string) {
    this.client = EventStoreDBClient.connectionString(connectionString);
  }

  async append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    try {
      const result = await this.client.appendToStream(
        streamName,
        events.map((e) => jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: e.metadata as never })),
        { expectedRevision: toEsdbRevision(expectedRevision) },
      );
      return { nextRevision: Number(result.nextExpectedRevision), position: Number(result.position?.commit ?? -1) };
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        const actual = typeof error.actualVersion === 'bigint' ? Number(error.actualVersion) : 'no_stream';
        throw new ConcurrencyError(streamName, expectedRevision, actual);
      }
      throw error;
    }
  }

  async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    const results: AppendResult[] = [];
    for (const a of appends) results.push(await this.append(a.streamName, a.events, a.expectedRevision));
    return results;
  }

  async readStream(streamName: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const backwards = options.direction === 'backwards';
    const events: StoredEvent[] = [];
    try {
      const read = this.client.readStream(streamName, {
        direction: backwards ? BACKWARDS : FORWARDS,
        fromRevision: options.fromRevision !== undefined ? BigInt(options.fromRevision) : backwards ? END : START,
        ...(options.maxCount !== undefined ? { maxCount: options.maxCount } : {}),
      });
      for await (const resolved of read) {
        const recorded = resolved.event as Recorded | undefined;
        if (recorded) events.push(toStored(recorded, Number(recorded.position?.commit ?? -1)));
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async headPosition(): Promise<number> {
    for await (const resolved of this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 })) {
      return Number(resolved.event?.position.commit ?? -1);
    }
    return -1;
  }

  subscribeToAll(options: SubscribeOptions = {}): Subscription {
    const prefixes = options.filter?.streamPrefixes;
    const types = options.filter?.eventTypes;
    const serverFilter = prefixes
      ? streamNameFilter({ prefixes, checkpointInterval: 1 })
      : types
        ? eventTypeFilter({ prefixes: types, checkpointInterval: 1 })
        : excludeSystemEvents({ checkpointInterval: 1 });
    const from = options.fromPosition ?? -1;
    const queue: SubscriptionBatch[] = [];
    let wake: (() => void) | undefined;
    let failure: unknown;
    const push = (batch: SubscriptionBatch) => {
      queue.push(batch);
      wake?.();
    };
    const subscription = this.client.subscribeToAll({
      fromPosition: from < 0 ? START : { commit: BigInt(from), prepare: BigInt(from) },
      filter: {
        ...serverFilter,
        checkpointReached: (_s, position) => push({ events: [], position: Number(position.commit) }),
      },
    });
    subscription.on('data', (resolved: AllStreamResolvedEvent) => {
      const recorded = resolved.event;
      if (!recorded) return;
      const position = Number(recorded.position.commit);
      const event = toStored(recorded as unknown as Recorded, position);
      push({ events: matchesFilter(event, options.filter) ? [event] : [], position });
    });
    subscription.on('error', (error) => {
      failure = error;
      wake?.();
    });
    let stopped = false;
    const batchSize = options.batchSize ?? 1000;
    async function* batches(): AsyncGenerator<SubscriptionBatch> {
      while (!stopped) {
        if (failure) throw failure;
        if (queue.length === 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        // Merge what is queued into one batch so consumers can write in bulk.
        const merged: SubscriptionBatch = { events: [], position: -1 };
        while (queue.length > 0 && merged.events.length < batchSize) {
          const next = queue.shift()!;
          merged.events.push(...next.events);
          merged.position = Math.max(merged.position, next.position);
        }
        yield merged;
      }
    }
    const iterator = batches();
    return {
      [Symbol.asyncIterator]: () => iterator,
      stop: async () => {
        stopped = true;
        wake?.();
        await subscription.unsubscribe();
      },
    };
  }

  async ping(): Promise<void> {
    await this.headPosition();
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }
}
