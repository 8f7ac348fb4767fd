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
}

export interface NewEvent<Type extends string = string, Data = Record<string, unknown>> {
  /** Event id (UUID). A re-append of an already stored id is a no-op. */
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
  /** Revision of the last event now in the stream. */
  nextRevision: number;
  /** Global position of the last appended (or already stored) event. */
  position: number;
}

export interface ReadStreamOptions {
  direction?: 'forwards' | 'backwards';
  /** Inclusive start revision; defaults to the start (forwards) or end (backwards). */
  fromRevision?: number;
  maxCount?: number;
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

export interface Subscription extends AsyncIterable<SubscriptionBatch> {
  stop(): Promise<void>;
}

export interface EventStore {
  readonly kind: string;
  append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends to several streams. Embedded: one transaction, all or nothing (a conflict on
   * any stream writes nothing). EventStoreDB has no multi-stream transaction: appends run
   * in order and a failure leaves the earlier ones written; a retry is safe because a
   * re-append of stored event ids is a no-op.
   */
  appendMany(appends: StreamAppend[]): Promise<AppendResult[]>;
  /** Events of one stream; an empty array when the stream does not exist. */
  readStream(streamName: string, options?: ReadStreamOptions): Promise<StoredEvent[]>;
  /** Position of the last event in the store, -1 when empty. */
  headPosition(): Promise<number>;
  subscribeToAll(options?: SubscribeOptions): Subscription;
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
