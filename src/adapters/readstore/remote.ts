import type { MessagePort } from 'node:worker_threads';
import {
  DuplicateKeyError,
  ReadStoreUnavailableError,
  type Checkpoint,
  type Collection,
  type Doc,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Page,
  type ReadOptions,
  type ReadStore,
  type StreamOptions,
  type Update,
  type WriteOp,
} from './port.js';
import { InvalidCursorError } from './cursor.js';

/**
 * A read store in another thread of this process (the embedded read store keeps its documents in
 * the memory of the thread that opened it): every call crosses a MessagePort to `serveReadStore`
 * there and comes back with its answer. Streams come a batch at a time. Used by the workers'
 * thread (src/workers/thread.ts), which reads the read models the main thread projects.
 */
type Request =
  | { id: number; on: 'store'; method: string; args: unknown[] }
  | { id: number; on: 'collection'; collection: string; method: string; args: unknown[] }
  | { id: number; on: 'open'; collection: string; filter: Filter; options?: StreamOptions }
  | { id: number; on: 'next'; iterator: number }
  | { id: number; on: 'end'; iterator: number };

/** A request without its id (Omit over a union keeps only the common keys). */
type Unsent = Request extends infer R ? (R extends Request ? Omit<R, 'id'> : never) : never;

type Reply = { id: number; value?: unknown; error?: { name: string; message: string; collection?: string; index?: string } };

/** Answers a RemoteReadStore's calls on `port` from `store`; stops when the port closes. */
export function serveReadStore(store: ReadStore, port: MessagePort): void {
  const iterators = new Map<number, AsyncIterator<Doc[]>>();
  let nextIterator = 0;
  const answer = async (request: Request): Promise<unknown> => {
    switch (request.on) {
      case 'store': {
        // An optional method the store lacks (purgeDeleted) does nothing, as a caller of the store itself checks.
        const method = (store as unknown as Record<string, ((...args: unknown[]) => Promise<unknown>) | undefined>)[request.method];
        return method ? method.apply(store, request.args) : undefined;
      }
      case 'collection': {
        const collection = store.collection(request.collection) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
        return collection[request.method]!.apply(collection, request.args);
      }
      case 'open': {
        const id = nextIterator++;
        iterators.set(id, store.collection(request.collection).batches(request.filter, request.options)[Symbol.asyncIterator]());
        return id;
      }
      case 'next': {
        const iterator = iterators.get(request.iterator);
        const next = iterator ? await iterator.next() : { done: true as const, value: undefined };
        if (next.done) iterators.delete(request.iterator);
        return next.done ? null : next.value;
      }
      case 'end': {
        const iterator = iterators.get(request.iterator);
        iterators.delete(request.iterator);
        await iterator?.return?.();
        return null;
      }
    }
  };
  port.on('message', (request: Request) => {
    answer(request).then(
      (value) => port.postMessage({ id: request.id, value } satisfies Reply),
      (error: unknown) => {
        const { name, message, collection, index } = error as DuplicateKeyError;
        port.postMessage({ id: request.id, error: { name: name ?? 'Error', message: message ?? String(error), collection, index } } satisfies Reply);
      },
    );
  });
  port.on('close', () => {
    for (const iterator of iterators.values()) void iterator.return?.();
    iterators.clear();
  });
}

export class RemoteReadStore implements ReadStore {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();

  constructor(
    private readonly port: MessagePort,
    readonly kind: string,
  ) {
    port.on('message', ({ id, value, error }: Reply) => {
      const call = this.waiting.get(id);
      if (!call) return;
      this.waiting.delete(id);
      if (!error) return call.resolve(value);
      // The store's own refusals keep their class (callers tell a duplicate key or a bad cursor by it).
      if (error.name === 'DuplicateKeyError') return call.reject(new DuplicateKeyError(error.collection ?? '', error.index ?? ''));
      if (error.name === 'InvalidCursorError') return call.reject(new InvalidCursorError());
      if (error.name === 'ReadStoreUnavailableError') return call.reject(new ReadStoreUnavailableError(error.message));
      call.reject(Object.assign(new Error(error.message), { name: error.name }));
    });
  }

  /** Sends a request and resolves with its answer. */
  private call<T>(request: Unsent): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.port.postMessage({ ...request, id });
    });
  }

  collection<T extends { _id: string } = Doc>(name: string): Collection<T> {
    const call = <R>(method: string, ...args: unknown[]) => this.call<R>({ on: 'collection', collection: name, method, args });
    const batches = (filter: Filter, options?: StreamOptions): AsyncIterable<T[]> => {
      const store = this;
      return {
        async *[Symbol.asyncIterator]() {
          const iterator = await store.call<number>({ on: 'open', collection: name, filter, ...(options ? { options } : {}) });
          let finished = false;
          try {
            for (;;) {
              const batch = await store.call<T[] | null>({ on: 'next', iterator });
              if (batch === null) {
                finished = true;
                return;
              }
              yield batch;
            }
          } finally {
            // Left early (a break): the other side's iterator is closed too.
            if (!finished) await store.call({ on: 'end', iterator });
          }
        },
      };
    };
    return {
      name,
      get: (id: string, options?: ReadOptions) => call<T | null>('get', id, options),
      findOne: (filter: Filter, options?: ReadOptions) => call<T | null>('findOne', filter, options),
      find: (filter: Filter, options?: FindOptions) => call<Page<T>>('find', filter, options),
      stream: (filter: Filter, options?: StreamOptions): AsyncIterable<T> => ({
        async *[Symbol.asyncIterator]() {
          for await (const batch of batches(filter, options)) yield* batch;
        },
      }),
      batches,
      count: (filter?: Filter) => call<number>('count', filter),
      updateOne: (id: string, update: Update, options?: { upsert?: boolean }) => call<boolean>('updateOne', id, update, options),
      replaceOne: (id: string, doc: Omit<T, '_id'>) => call<void>('replaceOne', id, doc),
      deleteOne: (id: string) => call<void>('deleteOne', id),
      swap: (id: string, expected: Partial<Omit<T, '_id'>> | null, next: Omit<T, '_id'> | null) => call<{ swapped: boolean; current: T | null }>('swap', id, expected, next),
      createIndex: (index: IndexSpec) => call<void>('createIndex', index),
    };
  }

  private store<R>(method: string, ...args: unknown[]): Promise<R> {
    return this.call<R>({ on: 'store', method, args });
  }

  applyBatch(ops: WriteOp[], checkpoint?: Checkpoint | Checkpoint[]): Promise<void> {
    return this.store('applyBatch', ops, checkpoint);
  }

  getCheckpoint(name: string): Promise<number | null> {
    return this.store('getCheckpoint', name);
  }

  setCheckpoint(name: string, position: number | null): Promise<void> {
    return this.store('setCheckpoint', name, position);
  }

  dropCollection(name: string): Promise<void> {
    return this.store('dropCollection', name);
  }

  ping(): Promise<void> {
    return this.store('ping');
  }

  purgeDeleted(): Promise<void> {
    return this.store('purgeDeleted');
  }

  /** The store belongs to the other thread: closing here only stops asking it. */
  async close(): Promise<void> {
    for (const call of this.waiting.values()) call.reject(new Error('the read store connection to the main thread is closed'));
    this.waiting.clear();
  }
}
