import {
  checkAppendSizesAgainst,
  type AppendResult,
  type EventFilter,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadStreamOptions,
  type StoredEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionBatch,
} from '../../src/adapters/eventstore/port.js';

/** What the decorator does to the stream appends after the next `after` ones succeed. */
export interface Fault {
  after: number;
  /**
   * `throw`: that one append fails (a transient error); `crash`: every append fails until
   * `restart()`; `lost`: that append is stored, then its caller gets an error (a timeout whose
   * write landed, or a process that died before the answer) and every later append fails until
   * `restart()`.
   */
  mode: 'throw' | 'crash' | 'lost';
  /** Which streams' appends count towards `after` (default: all); others (background workers) pass. */
  counts?: (streamName: string) => boolean;
}

export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

/**
 * EventStoreDB's write semantics over any event store, for tests without a server: no
 * multi-stream transaction (`atomicBatches` false, `appendMany` appends stream by stream), and
 * a fault can be injected between any two stream appends, and (with `maxAppendBytes`) an append
 * larger than that is refused as the server refuses one over its `MaxAppendSize`. Reads,
 * subscriptions, expected revisions and event-id idempotency are the inner store's.
 */
export class StreamByStreamStore implements EventStore {
  readonly kind: string;
  readonly atomicBatches = false;
  /** Stream appends that reached the inner store. */
  appends = 0;
  private fault?: Fault & { seen: number };
  private crashed = false;
  /** Runs before each stream append (e.g. a racing writer, or a yield to let others interleave). */
  beforeAppend?: (streamName: string) => Promise<void>;
  /** When set, every subscription ends (as a server that drops it) after this many batches. */
  endSubscriptionsAfter?: number;
  /** Subscriptions opened so far. */
  subscriptions = 0;
  /** When set, every read, append and probe fails with it (a server that is down or refuses). */
  failure?: Error;
  /** When true, every read, append and probe waits until it is false again (a stalled server). */
  stalled = false;
  private unstall: (() => void)[] = [];

  setStalled(stalled: boolean): void {
    this.stalled = stalled;
    if (!stalled) for (const resume of this.unstall.splice(0)) resume();
  }

  private async gate(): Promise<void> {
    if (this.stalled) await new Promise<void>((resolve) => this.unstall.push(resolve));
    if (this.failure) throw this.failure;
  }

  constructor(
    readonly inner: EventStore,
    readonly maxAppendBytes?: number,
  ) {
    this.kind = `${inner.kind}, stream by stream`;
  }

  /** `$maxAge` set per stream (setMaxAge), as EventStoreDB keeps it in the stream's metadata. */
  readonly maxAges = new Map<string, number>();

  async setMaxAge(streamName: string, seconds: number): Promise<void> {
    await this.gate();
    if (this.crashed) throw new InjectedFault(`crashed: metadata of ${streamName} refused`);
    this.maxAges.set(streamName, seconds);
  }

  checkAppendSizes(appends: StreamAppend[]): void {
    if (this.maxAppendBytes !== undefined) checkAppendSizesAgainst(this.maxAppendBytes, appends);
  }

  failAfter(fault: Fault): void {
    this.fault = { ...fault, seen: 0 };
  }

  /** The "process" comes back: appends work again. */
  restart(): void {
    this.crashed = false;
    this.fault = undefined;
  }

  get isCrashed(): boolean {
    return this.crashed;
  }

  async append(streamName: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    await this.beforeAppend?.(streamName);
    await this.gate();
    if (this.crashed) throw new InjectedFault(`crashed: append to ${streamName} refused`);
    const fault = this.fault;
    const counted = fault && (fault.counts?.(streamName) ?? true);
    if (fault && counted && fault.seen >= fault.after && fault.mode === 'lost') {
      this.checkAppendSizes([{ streamName, events, expectedRevision }]);
      await this.inner.append(streamName, events, expectedRevision);
      this.appends += 1;
      this.crashed = true;
      throw new InjectedFault(`injected crash after the append to ${streamName} was stored`);
    }
    if (fault && counted && fault.seen >= fault.after) {
      if (fault.mode === 'crash') this.crashed = true;
      else this.fault = undefined;
      throw new InjectedFault(`injected ${this.crashed ? 'crash' : 'failure'} before the append to ${streamName}`);
    }
    this.checkAppendSizes([{ streamName, events, expectedRevision }]);
    const result = await this.inner.append(streamName, events, expectedRevision);
    this.appends += 1;
    if (fault && counted) fault.seen += 1;
    return result;
  }

  async appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    const results: AppendResult[] = [];
    for (const a of appends) results.push(await this.append(a.streamName, a.events, a.expectedRevision));
    return results;
  }

  async readStream(streamName: string, options?: ReadStreamOptions): Promise<StoredEvent[]> {
    await this.gate();
    return this.inner.readStream(streamName, options);
  }

  async headPosition(filter?: EventFilter): Promise<number> {
    await this.gate();
    return this.inner.headPosition(filter);
  }

  subscribeToAll(options?: SubscribeOptions): Subscription {
    this.subscriptions += 1;
    const inner = this.inner.subscribeToAll(options);
    const limit = this.endSubscriptionsAfter;
    if (limit === undefined) return inner;
    async function* ending(): AsyncGenerator<SubscriptionBatch> {
      let delivered = 0;
      try {
        for await (const batch of inner) {
          yield batch;
          if (++delivered >= limit!) return;
        }
      } finally {
        await inner.stop();
      }
    }
    const iterator = ending();
    return { [Symbol.asyncIterator]: () => iterator, stop: () => inner.stop() };
  }

  async ping(): Promise<void> {
    await this.gate();
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
