import {
  ANY,
  BACKWARDS,
  END,
  ErrorType,
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
  type Position,
  type ResolvedEvent,
  type StreamMetadata,
} from '@eventstore/db-client';
import { parseConnectionString } from '@eventstore/db-client/dist/Client/parseConnectionString.js';
import { readStreamMetadata } from '@eventstore/db-client/dist/streams/utils/streamMetadata.js';
import {
  AppendTooLargeError,
  checkAppendSizesAgainst,
  ConcurrencyError,
  isSystemEvent,
  matchesFilter,
  StoreUnavailableError,
  type AppendResult,
  type EventFilter,
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

/** Why a connection string is not one the client accepts, or undefined when it is (for config validation). */
export function connectionStringProblem(connectionString: string): string | undefined {
  // The parser console.warns an option it ignores (a mistyped `tsl=false`, `tlsVerifyCert=false`)
  // with the whole connection string under it, password included, outside the structured log; and
  // the start went on without the setting. Its first line becomes the problem instead. The parse is
  // synchronous, so nothing else runs while console.warn is replaced.
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (message?: unknown) => void warnings.push(String(message).split('\n')[0]!);
  let options: { throwOnAppendFailure?: boolean };
  try {
    options = parseConnectionString(connectionString) as { throwOnAppendFailure?: boolean };
  } catch (error) {
    return (error as Error).message.split('\n')[0];
  } finally {
    console.warn = warn;
  }
  // With it the client answers a wrong expected revision with `{ success: false }` instead of
  // throwing (batchAppend.ts), and every conflict would pass as a successful append.
  if (options.throwOnAppendFailure === false) {
    return 'throwOnAppendFailure=false makes the client report a concurrency conflict as a successful append; remove it';
  }
  return warnings.length > 0 ? `${warnings.join(' ')} Remove or correct that option (the client would ignore it)` : undefined;
}

/**
 * The credentials an append passes to take the client's `Append` path: the connection string's
 * own user, or (no TLS) none at all, since the client sends no credentials on an insecure
 * connection whatever it is given (`createCredentialsMetadataGenerator`, Client/index.ts). A TLS
 * connection without a user (a user certificate) has none to pass: its appends stay on `BatchAppend`.
 */
function unaryAppendCredentials(connectionString: string): { username: string; password: string } | undefined {
  const settings = parseConnectionString(connectionString) as { tls?: boolean; defaultCredentials?: { username: string; password: string } };
  return settings.defaultCredentials ?? (settings.tls === false ? { username: '', password: '' } : undefined);
}

/** The server's correlation projection ($by_correlation_id) follows these two metadata fields. */
export function toEsdbMetadata(metadata: EventMetadata): Record<string, unknown> {
  return {
    ...metadata,
    $correlationId: metadata.correlationId,
    $causationId: metadata.causationId ?? metadata.requestId ?? metadata.correlationId,
  };
}

export function fromEsdbMetadata(raw: unknown): EventMetadata {
  const { $correlationId: _c, $causationId: _k, ...metadata } = (raw ?? {}) as Record<string, unknown>;
  return metadata as unknown as EventMetadata;
}

const toStored = (recorded: Recorded, position: number): StoredEvent => ({
  id: recorded.id,
  type: recorded.type,
  data: recorded.data as Record<string, unknown>,
  metadata: fromEsdbMetadata(recorded.metadata),
  streamName: recorded.streamId,
  revision: Number(recorded.revision),
  position,
  recordedAt: recorded.created.toISOString(),
});

const toEsdbRevision = (expected: ExpectedRevision): AppendExpectedRevision =>
  expected === 'any' ? ANY : expected === 'no_stream' ? NO_STREAM : expected === 'stream_exists' ? STREAM_EXISTS : BigInt(expected);

const toEsdbPosition = (position: number): Position => ({ commit: BigInt(position), prepare: BigInt(position) });

/**
 * What the server answers to a batch append it did not take: not ready, too busy, or not the
 * leader without knowing which node is (Streams.BatchAppend.cs, NotHandled, 24.10). The answer
 * carries no error detail the 6.x client knows, so it reaches us as an UnknownError "Could not
 * recognize <message>" (unpackError.ts); nothing was written.
 */
const notHandledByServer = /Server Is Not Ready|Server Is Busy|No leader info available/;

/** The client's failures in the port's terms: the store cannot serve now, or refuses this service. */
export function toPortError(error: unknown, what: string): unknown {
  const type = (error as { type?: string } | undefined)?.type;
  const message = (error as Error | undefined)?.message ?? String(error);
  switch (type) {
    case ErrorType.UNKNOWN:
      if (!notHandledByServer.test(message)) return error;
    // falls through: the server did not take the request now
    case ErrorType.UNAVAILABLE:
    case ErrorType.NOT_LEADER:
    case ErrorType.TIMEOUT:
    // The server ended the call (a node shutting down, a leader change); the client reconnects.
    case ErrorType.CANCELLED:
      return new StoreUnavailableError('unavailable', `EventStoreDB did not answer (${what}): ${message}`, true, { cause: error });
    case ErrorType.DEADLINE_EXCEEDED:
      return new StoreUnavailableError('deadline_exceeded', `EventStoreDB did not answer in time (${what})`, true, { cause: error });
    case ErrorType.ACCESS_DENIED:
      return new StoreUnavailableError(
        'access_denied',
        `EventStoreDB denied access (${what}): the user in EVENTSTORE_URL needs read and write rights on every stream and $all`,
        false,
        { cause: error },
      );
    case ErrorType.STREAM_DELETED:
      return new StoreUnavailableError(
        'stream_deleted',
        `EventStoreDB says the stream was deleted (${what}); this service never deletes streams: an operator must restore it`,
        false,
        { cause: error },
      );
    default:
      return error;
  }
}

class ReadDeadlineError extends Error {}

/**
 * Options of every read a decision or a wait depends on: the leader answers it, or the node
 * refuses with NotLeader and the leader's address. Without it a follower serves the read from
 * its own copy, which can lag behind an append the leader already acknowledged, and the 6.x
 * client never leaves a node that became a follower: that node forwards appends to the leader
 * (ClusterVNodeController.cs, HandleAsNonLeader of WriteEvents, 24.10) and serves reads, so no
 * call fails and nothing makes the client look for the leader again (Client/index.ts,
 * shouldReconnect: only NotLeader, Unavailable and Cancelled).
 */
const onLeader = { requiresLeader: true } as const;

const isNotLeader = (error: unknown): boolean => (error as { type?: string } | undefined)?.type === ErrorType.NOT_LEADER;

/**
 * Runs a read once more when the node refused it as not the leader: the client, handling that
 * refusal, closed its channel and connects the next call to the leader the error named
 * (Client/index.ts, handleError), which it has done once the current turn of the event loop is over.
 */
async function readOnLeader<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!isNotLeader(error)) throw error;
    await new Promise((resolve) => setImmediate(resolve));
    return read();
  }
}

export interface EsdbOptions {
  /** Deadline of one read (a stream, a page of $all); the client's own reads have none. */
  readDeadlineMs?: number;
  /** Deadline of the reachability probe. */
  pingDeadlineMs?: number;
  /** Deadline of one append, enforced by the client (gRPC); a timed-out append may have been stored. */
  appendDeadlineMs?: number;
  /** A client to use instead of one made from the connection string (tests). */
  client?: EventStoreDBClient;
  /**
   * The server's `MaxAppendSize` (EVENTSTORE_MAX_APPEND_SIZE; the server's default, 1 MiB): an
   * append over it is refused here before it is sent (AppendTooLargeError, HTTP 413).
   */
  maxAppendBytes?: number;
}

/** EventStoreDB's default `MaxAppendSize`. */
export const defaultMaxAppendBytes = 1_048_576;

/**
 * EventStoreDB adapter: a thin mapping of the port onto @eventstore/db-client.
 * Global position = the commit position in the transaction log. What holds on which server
 * version: docs/eventstore.md.
 */
export class EsdbEventStore implements EventStore {
  readonly kind = 'eventstoredb';
  /** Appends to several streams are not one transaction here: see src/commands/batch-intents.ts. */
  readonly atomicBatches = false;
  private readonly client: EventStoreDBClient;
  private readonly readDeadlineMs: number;
  private readonly pingDeadlineMs: number;
  private readonly appendDeadlineMs: number;
  /** Call credentials that make the client append with one `Append` call per append (see `append`). */
  private readonly appendCredentials: { username: string; password: string } | undefined;
  readonly maxAppendBytes: number;
  /** Stops of the open subscriptions: `dispose()` cancels their calls without ending their streams. */
  private readonly openSubscriptions = new Set<() => Promise<void>>();

  constructor(connectionString: string, options: EsdbOptions = {}) {
    const problem = connectionStringProblem(connectionString);
    if (problem) throw new Error(`EVENTSTORE_URL is not a valid esdb connection string: ${problem}`);
    this.client = options.client ?? EventStoreDBClient.connectionString(connectionString);
    this.readDeadlineMs = options.readDeadlineMs ?? 10_000;
    this.pingDeadlineMs = options.pingDeadlineMs ?? 1_500;
    this.appendDeadlineMs = options.appendDeadlineMs ?? 10_000;
    this.appendCredentials = unaryAppendCredentials(connectionString);
    this.maxAppendBytes = options.maxAppendBytes ?? defaultMaxAppendBytes;
  }

  /** Measured on the events as sent (with the server's correlation fields in the metadata). */
  checkAppendSizes(appends: StreamAppend[]): void {
    checkAppendSizesAgainst(
      this.maxAppendBytes,
      appends.map(({ streamName, events }) => ({ streamName, events: events.map((e) => ({ type: e.type, data: e.data, metadata: toEsdbMetadata(e.metadata) })) })),
    );
  }

  async setMaxAge(streamName: string, seconds: number): Promise<void> {
    try {
      const metadata = await this.streamMetadata(streamName);
      if (metadata?.maxAge === seconds) return;
      // An append of the `$$` stream (setStreamMetadata.ts): through `Append`, as `append` below.
      await this.client.setStreamMetadata(streamName, { ...metadata, maxAge: seconds }, this.appendCallOptions());
    } catch (error) {
      throw toPortError(error, `set the $maxAge of ${streamName}`);
    }
  }

  /**
   * The stream's metadata as the client's `getStreamMetadata` reads it (the last event of its
   * `$$` stream), within the read deadline: the client's own read has none (its reads ask gRPC for
   * an infinite deadline whatever the options say), so a stalled server held `setMaxAge`, and with
   * it the completer's start and a request writing an intent in parts, for ever.
   */
  private async streamMetadata(streamName: string): Promise<StreamMetadata | undefined> {
    let last: ResolvedEvent | undefined;
    try {
      await readOnLeader(async () => {
        last = undefined;
        const read = this.client.readStream(`$$${streamName}`, { direction: BACKWARDS, fromRevision: END, maxCount: 1, ...onLeader });
        await this.drain(read, `read the metadata of ${streamName}`, (resolved) => void (last = resolved));
      });
    } catch (error) {
      if (error instanceof StreamNotFoundError) return undefined;
      throw error;
    }
    return last?.event?.isJson ? readStreamMetadata(last.event.data as never) : undefined;
  }

  async append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const sent = events.map((e) => ({ id: e.id, type: e.type, data: e.data, metadata: toEsdbMetadata(e.metadata) }));
    checkAppendSizesAgainst(this.maxAppendBytes, [{ streamName, events: sent }]);
    try {
      // With call credentials the client appends through one `Append` call of its own, with
      // `deadline` as the call's gRPC deadline, instead of its shared `BatchAppend` stream
      // (appendToStream/index.ts): that stream's calls have no client-side deadline, and its one
      // table of pending appends for every stream of the process (batchAppend.ts) let an error on
      // an older stream fail appends the newer one then stored, and throw (a process crash) on
      // their answers. Same user as the connection's own: docs/eventstore.md.
      const result = await this.client.appendToStream(streamName, sent.map((e) => jsonEvent(e as never)), {
        expectedRevision: toEsdbRevision(expectedRevision),
        ...this.appendCallOptions(),
      });
      return { nextRevision: Number(result.nextExpectedRevision), position: Number(result.position?.commit ?? -1) };
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        const actual = typeof error.actualVersion === 'bigint' ? Number(error.actualVersion) : 'no_stream';
        throw new ConcurrencyError(streamName, expectedRevision, actual);
      }
      // The server's limit is lower than EVENTSTORE_MAX_APPEND_SIZE says.
      if ((error as { type?: string }).type === ErrorType.MAXIMUM_APPEND_SIZE_EXCEEDED) {
        throw new AppendTooLargeError(streamName, undefined, (error as { maxAppendSize: number }).maxAppendSize, { cause: error });
      }
      throw toPortError(error, `append to ${streamName}`);
    }
  }

  private appendCallOptions(): { deadline: number; credentials?: { username: string; password: string } } {
    return { deadline: this.appendDeadlineMs, ...(this.appendCredentials ? { credentials: this.appendCredentials } : {}) };
  }

  async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    const results: AppendResult[] = [];
    for (const a of appends) results.push(await this.append(a.streamName, a.events, a.expectedRevision));
    return results;
  }

  /**
   * Reads a client stream to its end within a deadline: the client's reads have none, so a
   * stalled server would hold the caller forever. `take` returns false to stop early.
   */
  private async drain(
    read: AsyncIterable<ResolvedEvent> & { cancel(): Promise<void>; destroy(error?: Error): void },
    what: string,
    take: (resolved: ResolvedEvent) => boolean | void,
    deadlineMs = this.readDeadlineMs,
  ): Promise<void> {
    const timer = setTimeout(() => read.destroy(new ReadDeadlineError()), deadlineMs);
    try {
      for await (const resolved of read) {
        if (take(resolved) === false) break;
      }
    } catch (error) {
      if (error instanceof ReadDeadlineError) {
        throw new StoreUnavailableError('deadline_exceeded', `EventStoreDB did not answer within ${deadlineMs} ms (${what})`, true);
      }
      throw error;
    } finally {
      clearTimeout(timer);
      void read.cancel().catch(() => {});
    }
  }

  async readStream(streamName: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    const backwards = options.direction === 'backwards';
    try {
      return await readOnLeader(async () => {
        const events: StoredEvent[] = [];
        const read = this.client.readStream(streamName, {
          direction: backwards ? BACKWARDS : FORWARDS,
          fromRevision: options.fromRevision !== undefined ? BigInt(options.fromRevision) : backwards ? END : START,
          ...(options.maxCount !== undefined ? { maxCount: options.maxCount } : {}),
          ...onLeader,
        });
        await this.drain(read, `read ${streamName}`, (resolved) => {
          const recorded = resolved.event as Recorded | undefined;
          if (recorded) events.push(toStored(recorded, Number(recorded.position?.commit ?? -1)));
        });
        return events;
      });
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw toPortError(error, `read ${streamName}`);
    }
  }

  /**
   * `$all` read backwards a page at a time down to the last event the filter matches (the
   * server's own events never match). The tail of `$all` is often events nobody subscribes
   * to (system events, streams outside the filter); a filtered subscription only reports
   * progress past those at server checkpoints, so "caught up" is measured against this.
   */
  async headPosition(filter?: EventFilter, deadlineMs = this.readDeadlineMs): Promise<number> {
    let from: Position | typeof END = END;
    let below = Number.POSITIVE_INFINITY;
    // The last event usually matches: a small first page, larger ones after.
    for (let pageSize = 16; ; pageSize = Math.min(pageSize * 4, 1024)) {
      let found = -1;
      let count = 0;
      const start = below;
      const startFrom = from;
      try {
        await readOnLeader(async () => {
          // A page read again on the leader starts over.
          [found, count, below, from] = [-1, 0, start, startFrom];
          const read = this.client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: pageSize, ...onLeader });
          await this.drain(
            read,
            'read the head of $all',
            (resolved) => {
              count += 1;
              const recorded = resolved.event;
              if (!recorded?.position) return;
              const position = Number(recorded.position.commit);
              if (position >= below) return;
              below = position;
              from = recorded.position;
              const event = { streamName: recorded.streamId, type: recorded.type };
              if (!isSystemEvent(event) && matchesFilter(event, filter)) {
                found = position;
                return false;
              }
            },
            deadlineMs,
          );
        });
      } catch (error) {
        throw toPortError(error, 'read the head of $all');
      }
      if (found >= 0) return found;
      if (count < pageSize || below === start) return -1;
    }
  }

  /** The last event of `$all`, the server's own included (its checkpoints can be at one). */
  async endPosition(deadlineMs = this.readDeadlineMs): Promise<number> {
    let end = -1;
    try {
      await readOnLeader(async () => {
        const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1, ...onLeader });
        await this.drain(read, 'read the end of $all', (resolved) => {
          if (resolved.event?.position) end = Number(resolved.event.position.commit);
          return false;
        }, deadlineMs);
      });
    } catch (error) {
      throw toPortError(error, 'read the end of $all');
    }
    return end;
  }

  /**
   * Catch-up then live, read with backpressure: the client's stream is paused until the
   * consumer asks for the next batch (its buffer holds at most `batchSize` events), so a
   * rebuild does not buffer all of `$all`. Server checkpoints move the position past events
   * the filter skipped, but only once every event before them was handed out.
   */
  subscribeToAll(options: SubscribeOptions = {}): Subscription {
    const filter = options.filter;
    const prefixes = filter?.streamPrefixes;
    const serverFilter =
      prefixes && prefixes.length > 0 && !prefixes.includes('')
        ? streamNameFilter({ prefixes, checkpointInterval: 1 })
        : filter?.eventTypes
          ? eventTypeFilter({ prefixes: filter.eventTypes, checkpointInterval: 1 })
          : excludeSystemEvents({ checkpointInterval: 1 });
    const from = options.fromPosition ?? -1;
    const batchSize = options.batchSize ?? 1000;
    let checkpoint = -1;
    let failure: unknown;
    let ended = false;
    let stopped = false;
    let wake: () => void = () => {};
    const signal = () => wake();
    const subscription = this.client.subscribeToAll(
      {
        fromPosition: from < 0 ? START : toEsdbPosition(from),
        filter: {
          ...serverFilter,
          checkpointReached: (_s, position) => {
            checkpoint = Math.max(checkpoint, Number(position.commit));
            signal();
          },
        },
      },
      { highWaterMark: Math.max(16, batchSize) },
    );
    subscription.on('readable', signal);
    subscription.on('end', () => ((ended = true), signal()));
    subscription.on('close', () => ((ended = true), signal()));
    subscription.on('error', (error) => ((failure = error), signal()));

    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      this.openSubscriptions.delete(stop);
      await subscription.unsubscribe().catch(() => {});
      subscription.destroy();
    };
    const stop = async () => {
      stopped = true;
      signal();
      await release();
    };
    this.openSubscriptions.add(stop);

    async function* batches(): AsyncGenerator<SubscriptionBatch> {
      let delivered = from;
      try {
        while (!stopped) {
          if (failure) throw toPortError(failure, 'subscription to $all');
          const events: StoredEvent[] = [];
          let position = delivered;
          let resolved: AllStreamResolvedEvent | null;
          while (events.length < batchSize && (resolved = subscription.read() as AllStreamResolvedEvent | null) !== null) {
            const recorded = resolved.event;
            if (!recorded) continue;
            const at = Number(recorded.position.commit);
            position = Math.max(position, at);
            const event = toStored(recorded as unknown as Recorded, at);
            if (!isSystemEvent(event) && matchesFilter(event, filter)) events.push(event);
          }
          // A checkpoint covers what came before it; it is safe once the buffer is empty.
          if (subscription.readableLength === 0 && checkpoint > position) position = checkpoint;
          if (position > delivered || events.length > 0) {
            delivered = Math.max(delivered, position);
            yield { events, position: delivered };
            continue;
          }
          if (ended) return;
          await new Promise<void>((resolve) => (wake = resolve));
          wake = () => {};
        }
      } finally {
        await release();
      }
    }
    const iterator = batches();
    return { [Symbol.asyncIterator]: () => iterator, stop };
  }

  /** One event of `$all` (needs the read right on it), within a short deadline. */
  async ping(): Promise<void> {
    try {
      await this.drain(this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 }), 'ping', () => false, this.pingDeadlineMs);
    } catch (error) {
      throw toPortError(error, 'ping');
    }
  }

  /** Ends every open subscription's iterator, then closes the connection. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.openSubscriptions].map((stop) => stop()));
    await this.client.dispose();
  }
}
