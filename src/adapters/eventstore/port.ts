/**
 * Event store port. Adapters: SQLite (embedded default) and EventStoreDB.
 * Every adapter passes test/contract/eventstore.contract.ts.
 */

export type ActorType = 'client' | 'user' | 'team_member' | 'system' | 'anonymous';

export interface Actor {
  type: ActorType;
  id: string;
}

export interface EventMetadata {
  tenantId: string;
  actor: Actor;
  correlationId: string;
  causationId?: string;
  requestId?: string;
  /** W3C traceparent of the step that appended the event (src/observability/trace.ts). */
  traceparent?: string;
  occurredAt: string;
  /** Set on events a multi-stream batch wrote on a store without atomic batches (see docs/eventstore.md). */
  batch?: { id: string; item: number };
}

export interface NewEvent<Type extends string = string, Data = Record<string, unknown>> {
  /**
   * Event id (UUID). A re-append of an already stored id with the same expected revision (or
   * `no_stream`) is a no-op on every store, durably; with `any` or `stream_exists` EventStoreDB
   * only remembers recent ids in memory (a cache of 8 MiB, emptied by a restart: IndexWriter.cs
   * `CheckCommit`, 24.10). A retry decided at a later revision must check the stream first
   * (the command loop does: HandleOptions.eventIds).
   */
  id: string;
  type: Type;
  data: Data;
  metadata: EventMetadata;
}

export interface StoredEvent<Type extends string = string, Data = Record<string, unknown>>
  extends NewEvent<Type, Data> {
  streamName: string;
  /** 0-based revision inside its stream. */
  revision: number;
  /** Global position in the whole store, strictly increasing. */
  position: number;
  /** When the store wrote it. */
  recordedAt: string;
}

/** `no_stream`: the stream must not exist; a number: its last revision must be exactly that. */
export type ExpectedRevision = 'no_stream' | 'stream_exists' | 'any' | number;

export interface StreamAppend {
  streamName: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
}

export interface AppendResult {
  /**
   * Revision of the last event this append wrote; for a retry of an append already stored (the
   * same event ids), the revision of its last event, which the stream may have moved past since.
   */
  nextRevision: number;
  /** Global position of the last appended (or already stored) event. */
  position: number;
}

export interface ReadStreamOptions {
  direction?: 'forwards' | 'backwards';
  /** Inclusive start revision; defaults to the start (forwards) or end (backwards). */
  fromRevision?: number;
  maxCount?: number;
  /**
   * `false`: the caller decides on what is not personal data (a door scan), so fields the
   * personal-data codec sealed are left out of the events instead of opened: no data key is read
   * and nothing is decrypted. Stores without the codec ignore it.
   */
  personalData?: boolean;
}

export interface EventFilter {
  streamPrefixes?: string[];
  eventTypes?: string[];
}

export interface SubscribeOptions {
  /** Exclusive: delivery starts after this global position. Omit (or -1) for the beginning. */
  fromPosition?: number;
  filter?: EventFilter;
  /** Upper bound on events in one delivered batch. */
  batchSize?: number;
}

/**
 * One delivery of a subscription: the matching events, and the position the
 * store was scanned through (which advances past events the filter skipped).
 */
export interface SubscriptionBatch {
  events: StoredEvent[];
  position: number;
}

/**
 * Batches in order. The iterator throws when the store fails and ends (returns) when the
 * subscription is stopped or the store closed or ended it; a consumer that must keep
 * reading subscribes again from its checkpoint. Reading is pulled: a slow consumer holds the
 * server back instead of buffering without bound.
 */
export interface Subscription extends AsyncIterable<SubscriptionBatch> {
  /** Ends the iterator and releases the server side (idempotent). */
  stop(): Promise<void>;
}

export interface EventStore {
  readonly kind: string;
  /**
   * True when `appendMany` is all or nothing. When false, the command layer writes a batch
   * through an intent and completes it (src/commands/batch-intents.ts).
   */
  readonly atomicBatches: boolean;
  append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends to several streams. With `atomicBatches` (embedded): one transaction, all or
   * nothing (a conflict on any stream writes nothing). Without (EventStoreDB before
   * multi-stream appends): appends run in order and a failure leaves the earlier ones written;
   * callers that need all or nothing use the batch intents of the command layer instead.
   */
  appendMany(appends: StreamAppend[]): Promise<AppendResult[]>;
  /** Events of one stream; an empty array when the stream does not exist. */
  readStream(streamName: string, options?: ReadStreamOptions): Promise<StoredEvent[]>;
  /**
   * Position of the last event the filter matches (without a filter: the last event that is
   * not the server's own), -1 when there is none. A subscription with the same filter has
   * caught up once it delivered a batch at or past this position, whatever follows it.
   */
  headPosition(filter?: EventFilter): Promise<number>;
  /**
   * Position of the last event the store holds, the server's own included, -1 when there is
   * none: no position a subscription reports is past it. Absent where that is `headPosition()`
   * (a store without events of its own). EventStoreDB reports progress at its checkpoints, which
   * can be a system event's position (a `$>` link of its standard projections, a `$metadata`),
   * past the last event that is not the server's own: a checkpoint is compared with this, not
   * with the head, to tell whether it belongs to this store.
   */
  endPosition?(): Promise<number>;
  subscribeToAll(options?: SubscribeOptions): Subscription;
  /**
   * The largest append the store takes, in bytes as `appendBytes` counts them (EventStoreDB:
   * its `MaxAppendSize`, 1 MiB by default); undefined when only the request body limits it.
   */
  readonly maxAppendBytes?: number;
  /**
   * Throws AppendTooLargeError for the first of these appends the store would refuse for its
   * size, writing nothing; absent when the store has no such limit. Decorators that change
   * what is stored (the personal-data codec seals fields) check the events as they would store them.
   */
  checkAppendSizes?(appends: StreamAppend[]): void;
  /**
   * Lets the store drop this stream's events once they are older than `seconds` (EventStoreDB:
   * the stream's `$maxAge`: reads of the stream stop returning them at once, scavenging then
   * deletes them); absent on a store that keeps
   * every event (embedded). Setting the same age again writes nothing.
   */
  setMaxAge?(streamName: string, seconds: number): Promise<void>;
  /** Cheap reachability probe for /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export class ConcurrencyError extends Error {
  override readonly name = 'ConcurrencyError';
  constructor(
    readonly streamName: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream',
  ) {
    super(`stream ${streamName}: expected revision ${String(expected)}, actual ${String(actual)}`);
  }
}

export function matchesFilter(event: { streamName: string; type: string }, filter?: EventFilter): boolean {
  if (!filter) return true;
  if (filter.streamPrefixes && !filter.streamPrefixes.some((p) => event.streamName.startsWith(p))) return false;
  if (filter.eventTypes && !filter.eventTypes.includes(event.type)) return false;
  return true;
}

/**
 * The store cannot serve the request now (unreachable, deadline passed, not the leader) or
 * refuses this service (access denied, a stream deleted by an operator). HTTP: 503
 * store_unavailable, with Retry-After when `retryable`.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(
    readonly reason: 'unavailable' | 'deadline_exceeded' | 'access_denied' | 'stream_deleted',
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * An append is larger than the store takes in one (EventStoreDB's `MaxAppendSize`). Nothing
 * was written. HTTP: 413 payload_too_large.
 */
export class AppendTooLargeError extends Error {
  override readonly name = 'AppendTooLargeError';
  constructor(
    readonly streamName: string,
    /** The append's size as `appendBytes` counts it; undefined when only the server measured it. */
    readonly bytes: number | undefined,
    readonly limit: number,
    options?: { cause?: unknown },
  ) {
    super(
      `an append to ${streamName} is ${bytes === undefined ? 'larger than' : `${bytes} bytes, more than`} the ${limit} bytes the event store takes in one append`,
      options,
    );
  }
}

/**
 * An append's size, weighed against EventStoreDB's `MaxAppendSize`: per event, its data and
 * metadata as UTF-8 JSON and twice the length of its type. It never undercounts the server:
 * 24.10's `Event.SizeOnDisk` is written to add the three, but its `??` and `+` make it count the
 * data alone (`data?.Length ?? 0 + metadata?.Length ?? ...`), so this refuses a little early.
 */
export function appendBytes(events: readonly { type: string; data: unknown; metadata: unknown }[]): number {
  let bytes = 0;
  for (const event of events) {
    bytes += Buffer.byteLength(JSON.stringify(event.data) ?? '', 'utf8') + Buffer.byteLength(JSON.stringify(event.metadata) ?? '', 'utf8') + 2 * event.type.length;
  }
  return bytes;
}

/** The `checkAppendSizes` of a store that takes at most `limit` bytes per append. */
export function checkAppendSizesAgainst(limit: number, appends: readonly { streamName: string; events: readonly { type: string; data: unknown; metadata: unknown }[] }[]): void {
  for (const { streamName, events } of appends) {
    const bytes = appendBytes(events);
    if (bytes > limit) throw new AppendTooLargeError(streamName, bytes, limit);
  }
}

/** Is this a stream the server writes for itself (`$`-prefixed stream or event type)? */
export const isSystemEvent = (event: { streamName: string; type: string }): boolean =>
  event.streamName.startsWith('$') || event.type.startsWith('$');
