/**
 * Read store port: document collections with MongoDB query and update semantics.
 * Adapters: embedded (SQLite file + in-memory documents, queried with mingo) and MongoDB.
 * Every adapter passes test/contract/readstore.contract.ts.
 */

export type Doc = { _id: string } & Record<string, unknown>;

/** A MongoDB filter document (`{field: value}`, `$and`, `$or`, `$in`, `$regex`, ...). */
export type Filter = Record<string, unknown>;
/** A MongoDB update document (`$set`, `$inc`, `$push`, `$unset`, `$setOnInsert`, ...). */
export type Update = Record<string, unknown>;
/** `{field: 1 | -1}` in priority order. */
export type Sort = Record<string, 1 | -1>;

export interface FindOptions {
  sort?: Sort;
  /** Page size; default 100. */
  limit?: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  cursor?: string;
  /** Fields to return (`{field: 1}`); `_id` is always returned. */
  projection?: Record<string, 1>;
  /** The caller only reads the documents (see ReadOptions). */
  readOnly?: boolean;
}

export interface ReadOptions {
  /**
   * The caller promises not to change the document (nor anything it holds), so an in-memory
   * store may hand out its own stored document instead of a copy. Stored documents are replaced,
   * never changed in place, so a read-only document stays what it was when read. MongoDB ignores it.
   */
  readOnly?: boolean;
}

export interface Page<T> {
  items: T[];
  /** Present when more documents follow. */
  nextCursor?: string;
}

export interface IndexSpec {
  name: string;
  keys: Record<string, 1 | -1>;
  unique?: boolean;
  /**
   * Speeds up "contains" searches (`$regex` of an escaped literal, any case) on its one key.
   * Embedded: an in-memory trigram index. MongoDB has no such index for unanchored regexes,
   * so there it is an ordinary index on the field.
   */
  substring?: boolean;
}

/**
 * A write addressed to one document by id. Projections emit these; the runner
 * applies them in order. `position` (set by the runner) lets an adapter without
 * multi-document transactions skip an operation it already applied.
 */
export type WriteOp = (
  | { kind: 'update'; collection: string; id: string; update: Update; upsert?: boolean }
  | { kind: 'replace'; collection: string; id: string; doc: Omit<Doc, '_id'> }
  | { kind: 'delete'; collection: string; id: string }
) & {
  position?: number;
  /** The checkpoint that guards this op when a batch moves several (default: the only one). */
  checkpoint?: string;
};

export interface Checkpoint {
  name: string;
  position: number;
}

export interface StreamOptions {
  sort?: Sort;
  batchSize?: number;
  readOnly?: boolean;
}

export interface Collection<T extends { _id: string } = Doc> {
  readonly name: string;
  get(id: string, options?: ReadOptions): Promise<T | null>;
  findOne(filter: Filter, options?: ReadOptions): Promise<T | null>;
  /** Cursor paging: sorted by `sort` then `_id`; `nextCursor` resumes after the last item. */
  find(filter: Filter, options?: FindOptions): Promise<Page<T>>;
  /**
   * Every matching document, in batches, for exports and rebuild checks. `readOnly`: the caller
   * promises not to change the documents, so an in-memory store may skip copying them.
   */
  stream(filter: Filter, options?: StreamOptions): AsyncIterable<T>;
  /**
   * The same documents as `stream`, in the same order, as arrays of up to `batchSize`: one await
   * per batch instead of one per document, for a reader that handles many small documents (a
   * byinfo answer of a few hundred guests).
   */
  batches(filter: Filter, options?: StreamOptions): AsyncIterable<T[]>;
  count(filter?: Filter): Promise<number>;
  /** Update one document by id; with `upsert` it is created when missing. Returns whether it exists now. */
  updateOne(id: string, update: Update, options?: { upsert?: boolean }): Promise<boolean>;
  replaceOne(id: string, doc: Omit<T, '_id'>): Promise<void>;
  deleteOne(id: string): Promise<void>;
  /**
   * Compare and swap, against what is stored, as one step every process of the store sees the
   * same way: when the document matches `expected` (null: there is none; else each field given
   * is equal to it) it becomes `next` (null: it is deleted). Answers whether it did, and the
   * stored document after the call. For a lease two processes may race for (the projections
   * holder, src/projections/holder.ts); read models are written by `applyBatch`.
   */
  swap(id: string, expected: Partial<Omit<T, '_id'>> | null, next: Omit<T, '_id'> | null): Promise<{ swapped: boolean; current: T | null }>;
  createIndex(index: IndexSpec): Promise<void>;
}

export interface ReadStore {
  readonly kind: string;
  collection<T extends { _id: string } = Doc>(name: string): Collection<T>;
  /**
   * Apply writes and move the named checkpoint(s) to their positions (never backwards).
   * Embedded: one SQLite transaction. MongoDB: ordered writes, each guarded by
   * its `position` so a replay after a crash does not apply anything twice,
   * then the checkpoint.
   */
  applyBatch(ops: WriteOp[], checkpoint?: Checkpoint | Checkpoint[]): Promise<void>;
  getCheckpoint(name: string): Promise<number | null>;
  setCheckpoint(name: string, position: number | null): Promise<void>;
  /** Remove a collection and its documents (rebuild). Indexes are recreated by createIndex. */
  dropCollection(name: string): Promise<void>;
  ping(): Promise<void>;
  /**
   * Erasure (issue 14): makes deleted or overwritten data unrecoverable from files this
   * process owns (embedded: `secure_delete` is on, and the WAL is checkpointed and truncated).
   * A server store (MongoDB) owns its files: absent there.
   */
  purgeDeleted?(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The store's server cannot be reached now (no server selected within the driver's time, a
 * network error): nothing was read, and a write may not have happened. HTTP: 503
 * store_unavailable with Retry-After, as for the event store.
 */
export class ReadStoreUnavailableError extends Error {
  override readonly name = 'ReadStoreUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A unique index rejected a write. */
export class DuplicateKeyError extends Error {
  override readonly name = 'DuplicateKeyError';
  constructor(
    readonly collection: string,
    readonly index: string,
  ) {
    super(`duplicate key in ${collection} (index ${index})`);
  }
}
